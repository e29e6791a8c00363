# Prints the numpy values that tests/lua/ops/structure.lua pastes in: /usr/bin/python3 structure_numpy.py
import numpy as np
def lua(a):
    a=np.asarray(a)
    if a.ndim==0:
        return repr(a.item()) if a.dtype.kind!='b' else ('true' if a else 'false')
    return "{"+", ".join(lua(x) for x in a)+"}"
A=((np.arange(1,25)*7)%11-5).astype(np.float64).reshape(2,3,4)
M=A[1]
out={}
out['flip_all']=np.flip(A)
out['flip_13']=np.flip(A,(0,2))
out['flip_last']=np.flip(A,-1)
out['neg_slice']=A[1::-1, 2::-2, 3::-3]
out['neg_slice2']=A[:, ::-1, 2:0:-1]
out['diagonal']=np.diagonal(A,0,1,2)
out['diagonal_p1']=np.diagonal(A,1,1,2)
out['diagonal_m1']=np.diagonal(A,-1,1,2)
out['diagonal_13']=np.diagonal(A,0,0,2)
out['diagonal_21']=np.diagonal(A,1,2,1)
out['diag_m2']=np.diag(M,2)
out['diag_mm1']=np.diag(M,-1)
v=np.array([3.,-1.,2.])
out['diag_v']=np.diag(v)
out['diag_v2']=np.diag(v,2)
out['diag_vm1']=np.diag(v,-1)
out['tril']=np.tril(A)
out['tril_m1']=np.tril(A,-1)
out['triu']=np.triu(A)
out['triu_1']=np.triu(A,1)
out['trace']=np.trace(M)
out['logspace']=np.logspace(-1,2,7)
out['logspace2']=np.logspace(0,4,5,base=2)
x=np.array([1.,2.,3.]); y=np.array([10.,20.]); z=np.array([5.,6.,7.,8.])
X,Y,Z=np.meshgrid(x,y,z)
out['mesh_xy_x']=X; out['mesh_xy_y']=Y; out['mesh_xy_z']=Z
X,Y,Z=np.meshgrid(x,y,z,indexing='ij')
out['mesh_ij_x']=X; out['mesh_ij_y']=Y; out['mesh_ij_z']=Z
print("-- numpy", np.__version__, "on A = (arange(1,25)*7 % 11 - 5).reshape(2,3,4), M = A[1], v = {3,-1,2}")
print("local np = {")
for k,a in out.items(): print(f"  {k} = {lua(a)},")
print("}")
