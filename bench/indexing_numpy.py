# numpy's side of bench/indexing.lua: take_along_axis, add.at and a boolean index, best of 5.
#   /usr/bin/python3 bench/indexing_numpy.py [n]
import sys
import numpy as np, time
n=int(sys.argv[1]) if len(sys.argv)>1 else 2048; r=np.random.default_rng(0)
x=r.random((n,n)); idx=r.integers(0,n,(n,n)); src=r.random((n,n))
def best(f):
    b=1e9
    for _ in range(5):
        t=time.perf_counter(); f(); b=min(b,time.perf_counter()-t)
    return b
print("numpy take_along_axis: %.1f ms"%(1e3*best(lambda: np.take_along_axis(x,idx,1))))
def sa():
    o=x.copy(); np.add.at(o,(np.arange(n)[:,None],idx),src); return o
print("numpy add.at: %.1f ms"%(1e3*best(sa)))
print("numpy x[x>0.5]: %.1f ms"%(1e3*best(lambda: x[x>0.5])))
