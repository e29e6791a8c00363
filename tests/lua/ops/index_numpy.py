# Prints the numpy values that tests/lua/ops/index.lua pastes in: /usr/bin/python3 index_numpy.py
# Index values are 1-based on the Lua side; torch's scatter/scatter_add semantics are written
# out as loops over the index in row-major order (numpy has no scatter along a dim).
import numpy as np
def lua(a):
    a=np.asarray(a)
    if a.ndim==0:
        return repr(a.item()) if a.dtype.kind!='b' else ('true' if a else 'false')
    return "{"+", ".join(lua(x) for x in a)+"}"
A=((np.arange(1,61)*7)%13-6).astype(np.float64).reshape(3,4,5)
def ix(n, shape, size, mul=7):  # the same formula as index.lua's ix
    return ((np.arange(n)*mul) % size + 1).reshape(shape)
G3=ix(72,(3,4,6),5); G1=ix(40,(2,4,5),3,11); G2=ix(18,(2,3,3),4,5)
def scatter(x, dim, index, src, add):
    out=x.copy()
    for p in np.ndindex(*index.shape):
        q=list(p); q[dim]=index[p]-1; q=tuple(q)
        out[q] = out[q]+src[p] if add else src[p]
    return out
S=((np.arange(1,73)*5)%9-4).astype(np.float64).reshape(3,4,6)
out={}
out['gather3']=np.take_along_axis(A,G3-1,2)
out['gather1']=np.take_along_axis(A,G1-1,0)
out['gather2']=np.take_along_axis(A[:2,:,:3],G2-1,1)
out['scatter3']=scatter(A,2,G3[:,:,:4],S,False)
out['scatter_add3']=scatter(A,2,G3,S,True)
out['scatter_add1']=scatter(A,0,G1,S,True)
out['scatter_val2']=scatter(A,1,G2,np.full(G2.shape,9.5),False)
out['index_select2']=np.take(A,np.array([4,1,4,2])-1,axis=1)
out['take']=np.take(A,np.array([[60,1],[7,-1+61]])-1)
m=A>2
out['where']=[i+1 for i in np.nonzero(m)]
out['masked']=A[m]
m2=A.sum(2)>0
out['masked_rows']=A[m2]
out['int_sub']=A[:, np.array([[3,1],[2,3]])-1, :]
w=A.copy(); w[m]=-1; out['fill']=w
w=A.copy(); w[m2]=np.arange(1,6); out['scatter_rows']=w
w=A.copy(); w[:, np.array([2,4])-1]=7; out['put']=w
for k,v in out.items():
    if isinstance(v,list): print("  %s = {%s}," % (k, ", ".join(lua(x) for x in v)))
    else: print("  %s = %s," % (k, lua(v)))
