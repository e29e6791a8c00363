# Prints the numpy values that tests/lua/ops/fft.lua pastes in: /usr/bin/python3 fft_numpy.py
import numpy as np

def lua(a):
    a = np.asarray(a)
    if a.ndim == 0:
        return repr(float(a)) if a.dtype.kind == 'f' else repr(a.item())
    return "{" + ", ".join(lua(x) for x in a) + "}"

# x {3, 8}: integers, so every transform is exact enough to compare at 1e-12.
x = ((np.arange(24).reshape(3, 8) * 7) % 11 - 5).astype(np.float64)
y = ((np.arange(24).reshape(3, 8) * 5) % 9 - 4).astype(np.float64)
z = x + 1j * y
out = {}
def put(k, v):
    v = np.asarray(v)
    if np.iscomplexobj(v):
        out[k + '_re'] = lua(v.real); out[k + '_im'] = lua(v.imag)
    else:
        out[k] = lua(v)
put('fft', np.fft.fft(x))
put('fft_dim1', np.fft.fft(x, axis=0))
put('fft_n5', np.fft.fft(x, n=5))
put('fft_n11', np.fft.fft(x, n=11))
put('ifft_z', np.fft.ifft(z))
put('fft_z_ortho', np.fft.fft(z, norm='ortho'))
put('ifft_z_forward', np.fft.ifft(z, norm='forward'))
put('rfft', np.fft.rfft(x))
put('rfft_n7', np.fft.rfft(x, n=7))
put('irfft', np.fft.irfft(np.fft.rfft(x)))
put('irfft_z', np.fft.irfft(z[:, :5]))
put('irfft_z_n7', np.fft.irfft(z[:, :5], n=7))
put('fft2', np.fft.fft2(z))
put('ifft2', np.fft.ifft2(z))
put('fftn_s', np.fft.fftn(x, s=(4, 6)))
put('fftfreq8', np.fft.fftfreq(8))
put('fftfreq7', np.fft.fftfreq(7, d=0.5))
put('rfftfreq7', np.fft.rfftfreq(7))
put('fftshift', np.fft.fftshift(x))
put('ifftshift_dim2', np.fft.ifftshift(x, axes=1))
for k, v in out.items():
    print("  %s = %s," % (k, v))
