# Prints the numpy values that tests/lua/ops/empty.lua pastes in: /usr/bin/python3 empty_numpy.py
# Each case: numpy's shape, dtype and values for the expression of the same name in empty.lua.
import warnings
import numpy as np
warnings.simplefilter("ignore")  # mean of nothing warns; the value (nan) is what we compare
def lua(a):
    a=np.asarray(a)
    if a.ndim==0:
        if a.dtype.kind=='b': return 'true' if a else 'false'
        v=a.item()
        if isinstance(v,float) and v!=v: return '0/0'
        return repr(v)
    return "{"+", ".join(lua(x) for x in a)+"}"
DT={'float64':'f64','float32':'f32','int64':'i64','int32':'i32','bool':'bool'}
Z=np.zeros((0,3)); A=np.arange(1,13,dtype=np.float64).reshape(3,4)
out={}
out['zeros']=np.zeros((0,3))
out['arange_none']=np.arange(1,1,dtype=np.float64)        # tp.arange(1, 0): inclusive, no point
out['arange_down']=np.arange(5,6,-1,dtype=np.int64)       # tp.arange(5, 6, -1)
out['linspace0']=np.linspace(0,1,0)
out['tensor_empty']=np.array([],dtype=np.float64)
out['tensor_2x0']=np.array([[],[]],dtype=np.float64)
out['add']=Z+1
out['sum']=Z.sum(); out['sum0']=Z.sum(0); out['sum1']=Z.sum(1)
out['sum0_keep']=Z.sum(0,keepdims=True)
out['prod0']=Z.prod(0); out['max1']=Z.max(1)
out['isum0']=np.zeros((0,3),np.int32).sum(0)
out['mean']=Z.mean(); out['mean0']=Z.mean(0); out['var0']=Z.var(0); out['std0']=Z.std(0)
out['all']=Z.all(); out['any']=Z.any(); out['norm']=np.linalg.norm(Z)
out['mm_k0']=np.ones((3,0))@np.ones((0,4)); out['mm_n0']=np.ones((0,3))@np.ones((3,4))
out['dot0']=np.ones(0)@np.ones(0)
out['bmm_k0']=np.ones((2,3,0))@np.ones((2,0,2))
out['einsum']=np.einsum('ij,jk->ik',np.ones((2,0)),np.ones((0,3)))
out['cat']=np.concatenate([A,np.zeros((0,4))],0); out['cat_all']=np.concatenate([Z,Z],0)
out['cat1']=np.concatenate([np.zeros((0,2)),np.zeros((0,3))],1)
out['stack']=np.stack([np.zeros(0),np.zeros(0)])
out['slice_none']=A[2:2]; out['slice_end']=A[:,4:]; out['slice_back']=A[0:0:-1]
out['reshape']=Z.reshape(3,0,2); out['reshape_infer']=Z.reshape(-1,3)
out['transpose']=Z.T
out['mask']=A[A>100]; out['mask_rows']=A[np.array([False,False,False])]
out['where_idx']=np.nonzero(A.reshape(-1)>100)[0]+1
out['sort']=np.sort(np.zeros(0)); out['argsort']=np.argsort(np.zeros((2,0)),1)+1
out['cumsum']=np.cumsum(np.zeros((0,3)),0)
out['searchsorted']=np.searchsorted(np.zeros(0),np.array([1.,2.]))+1
out['unique']=np.unique(np.zeros(0))
out['diagonal_past']=np.diagonal(A,4); out['trace00']=np.trace(np.zeros((0,0)))
out['tril']=np.tril(Z); out['flip']=np.flip(Z,0)
out['det00']=np.linalg.det(np.zeros((0,0))); out['det_batch']=np.linalg.det(np.zeros((2,0,0)))
s,l=np.linalg.slogdet(np.zeros((0,0))); out['slogdet_sign']=s; out['slogdet_log']=l
out['inv00']=np.linalg.inv(np.zeros((0,0)))
out['solve']=np.linalg.solve(np.eye(2),np.zeros((2,0)))
q,r=np.linalg.qr(np.zeros((3,0)),mode='complete'); out['qr_q']=q; out['qr_r']=r
u,sv,vh=np.linalg.svd(np.zeros((2,0))); out['svd_u']=u; out['svd_s']=sv; out['svd_vh']=vh
out['pad']=np.pad(np.zeros((0,2)),((1,1),(0,0)),constant_values=5)
out['roll']=np.roll(np.zeros(0),2)
out['minimum']=np.minimum(np.zeros((0,1)),np.ones((1,3)))
out['write_none']=A.copy()
for k,v in out.items():
    v=np.asarray(v)
    print("  %s = {shape = {%s}, dtype = \"%s\", value = %s},"%(k,", ".join(map(str,v.shape)),DT[str(v.dtype)],lua(v)))
