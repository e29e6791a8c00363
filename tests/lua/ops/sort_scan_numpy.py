# Prints the numpy values that tests/lua/ops/sort_scan.lua pastes in: /usr/bin/python3 sort_scan_numpy.py
import numpy as np
def lua(a):
    a=np.asarray(a)
    if a.ndim==0:
        return repr(a.item()) if a.dtype.kind!='b' else ('true' if a else 'false')
    return "{"+", ".join(lua(x) for x in a)+"}"
A=((np.arange(1,25)*7)%11-5).astype(np.float64).reshape(2,3,4)   # ties in every line
B=(A/4+0.25)                                                       # non-integers, some zeros
out={}
for ax in range(3):
    out['sort%d'%(ax+1)]=np.sort(A,axis=ax,kind='stable')
    out['argsort%d'%(ax+1)]=np.argsort(A,axis=ax,kind='stable')+1
    # descending and stable, as torch: a stable argsort of -A
    out['argsort_desc%d'%(ax+1)]=np.argsort(-A,axis=ax,kind='stable')+1
    out['cumsum%d'%(ax+1)]=np.cumsum(A,axis=ax)
    out['cumprod%d'%(ax+1)]=np.cumprod(B,axis=ax)
    out['cummax%d'%(ax+1)]=np.maximum.accumulate(A,axis=ax)
    out['cummin%d'%(ax+1)]=np.minimum.accumulate(A,axis=ax)
    out['lcse%d'%(ax+1)]=np.logaddexp.accumulate(B,axis=ax)
i=np.argsort(-A,axis=-1,kind='stable')[...,:2]
out['topk_v']=np.take_along_axis(A,i,-1); out['topk_i']=i+1
i=np.argsort(A,axis=1,kind='stable')[:,:2,:]
out['topk_small_v']=np.take_along_axis(A,i,1); out['topk_small_i']=i+1
u,c=np.unique(A,return_counts=True); out['unique']=u; out['unique_counts']=c
s=np.array([-4.,-1.,0.,0.,2.5,7.]); v=np.array([[-5.,0.,2.5],[7.,8.,-1.]])
out['ss_left']=np.searchsorted(s,v)+1; out['ss_right']=np.searchsorted(s,v,side='right')+1
I=np.array([[3,-2,5],[1,1,-4]],dtype=np.int32)
out['icumsum']=np.cumsum(I,axis=1); out['icumprod']=np.cumprod(I,axis=0)
out['bcumsum']=np.cumsum(np.array([True,False,True,True]))
for k,v in out.items():
    print("  %s = %s,"%(k,lua(v)))
