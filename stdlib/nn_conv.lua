-- tapestry.nn_conv: the convolutions of tapestry.nn (nn.conv1d, nn.conv2d, nn.conv3d), written
-- on tp.conv2d's window signature, so they shard, fuse and differentiate as tp.conv2d does.
--   local nn = require "tapestry.nn"
--   local y = nn.conv3d(x, w, {padding = 1, bias = b})   -- x {N,C,D,H,W}, w {O,C/g,KD,KH,KW}
-- conv1d is conv2d over a height of 1. conv3d stacks the KD depth taps of the input along the
-- channels (im2col along depth only) and runs one conv2d over the depth positions folded into
-- the batch: out[n,o,d] = sum over kd, c of conv2d(x[n,c,d*sd + kd*dd], w[o,c,kd]).
local tp = require "tapestry"
local args = require "tapestry.args"

local conv = {}
local shape_str = args.shape_str

-- A per-dim option: a number for every spatial dim or a sequence of k numbers; each an integer
-- >= lo. Returns a sequence of k integers.
local function per_dim(fname, name, v, k, default, lo)
  if v == nil then v = default end
  local t = v
  if type(v) == "number" then
    t = {}
    for i = 1, k do t[i] = v end
  end
  if type(t) ~= "table" or args.is_tensor(t) or #t ~= k then
    args.fail(fname, "opts.%s must be a number or a sequence of %d numbers, got %s", name, k,
              type(v) == "table" and #v .. " entries" or tostring(v))
  end
  local out = {}
  for i = 1, k do
    if not args.is_int(t[i]) or t[i] < lo then
      args.fail(fname, "opts.%s[%d] must be an integer >= %d, got %s", name, i, lo, tostring(t[i]))
    end
    out[i] = math.tointeger(t[i])
  end
  return out
end

-- Checks x, w and opts of a k-D convolution and returns a table: x batched ({N, C, S1..Sk}),
-- w, stride, dilation, pads ({before, after} per spatial dim), groups, bias and whether x came
-- unbatched ({C, S1..Sk}), so the result drops the batch dim again.
local function prepare(fname, k, x, w, opts)
  args.tensor(fname, "x", x)
  args.tensor(fname, "w", w)
  opts = args.opts(fname, opts, {"stride", "padding", "dilation", "groups", "bias"})
  local unbatched = x:dim() == k + 1
  if x:dim() ~= k + 2 and not unbatched then
    local sp = ({"L", "H, W", "D, H, W"})[k]
    args.fail(fname, "x must be {N, C, %s} or {C, %s}, got %d-D %s", sp, sp, x:dim(), shape_str(x.shape))
  end
  if unbatched then x = x:unsqueeze(1) end
  args.dims(fname, "w", w, k + 2)
  local groups = args.count(fname, "opts.groups", opts.groups, 1)
  local c, o = x:size(2), w:size(1)
  if c % groups ~= 0 or o % groups ~= 0 then
    args.fail(fname, "opts.groups = %d must divide the channels of x %s (%d) and of w %s (%d)",
              groups, shape_str(x.shape), c, shape_str(w.shape), o)
  end
  if w:size(2) * groups ~= c then
    args.fail(fname, "w %s must have C/groups = %d input channels (dim 2) for x %s, got %d",
              shape_str(w.shape), c // groups, shape_str(x.shape), w:size(2))
  end
  local stride = per_dim(fname, "stride", opts.stride, k, 1, 1)
  local dilation = per_dim(fname, "dilation", opts.dilation, k, 1, 1)
  local pads = {}
  if opts.padding == "valid" then
    for i = 1, k do pads[i] = {0, 0} end
  elseif opts.padding == "same" then
    for i = 1, k do
      if stride[i] ~= 1 then
        args.fail(fname, "opts.padding = 'same' needs stride 1, got stride %s", table.concat(stride, ","))
      end
      -- As torch: the total dilation*(K-1), the odd element after.
      local total = dilation[i] * (w:size(2 + i) - 1)
      pads[i] = {total // 2, total - total // 2}
    end
  else
    local p = per_dim(fname, "padding", opts.padding, k, 0, 0)
    for i = 1, k do pads[i] = {p[i], p[i]} end
  end
  for i = 1, k do
    local span = dilation[i] * (w:size(2 + i) - 1) + 1
    local size = x:size(2 + i) + pads[i][1] + pads[i][2]
    if size < span then
      args.fail(fname, "spatial dim %d of x %s is %d with padding, smaller than the dilated kernel (%d) of w %s",
                i, shape_str(x.shape), size, span, shape_str(w.shape))
    end
  end
  local bias = opts.bias
  if bias ~= nil then
    args.tensor(fname, "opts.bias", bias)
    if bias:dim() ~= 1 or bias:size(1) ~= o then
      args.fail(fname, "opts.bias must be {%d} (the output channels of w %s), got %s", o,
                shape_str(w.shape), shape_str(bias.shape))
    end
  end
  return {x = x, w = w, stride = stride, dilation = dilation, pads = pads, groups = groups,
          bias = bias, unbatched = unbatched, k = k}
end

-- tp.conv2d pads symmetrically, by less than the dilated kernel; other paddings go into x.
local function conv2d_padded(x, w, stride, dilation, pads, groups)
  local sym = true
  for i = 1, 2 do
    local span = dilation[i] * (w:size(2 + i) - 1) + 1
    if pads[i][1] ~= pads[i][2] or pads[i][1] >= span then sym = false end
  end
  local padding = {pads[1][1], pads[2][1]}
  if not sym then
    local p = {{0, 0}, {0, 0}}
    for i = 1, 2 do p[2 + i] = pads[i] end
    x = x:pad(p)
    padding = {0, 0}
  end
  return tp.conv2d(x, w, {stride = stride, dilation = dilation, padding = padding, groups = groups})
end

-- Adds the bias along dim 2 and drops the batch dim of an unbatched input.
local function finish(c, y)
  if c.bias ~= nil then
    local shape = {1, c.bias:size(1)}
    for _ = 1, c.k do shape[#shape + 1] = 1 end
    y = y + c.bias:reshape(shape)
  end
  if c.unbatched then y = y:squeeze(1) end
  return y
end

function conv.conv1d(x, w, opts)
  local c = prepare("tapestry.nn.conv1d", 1, x, w, opts)
  local n, l = c.x:size(1), c.x:size(3)
  local x4 = c.x:reshape{n, c.x:size(2), 1, l}
  local w4 = c.w:reshape{c.w:size(1), c.w:size(2), 1, c.w:size(3)}
  local y = conv2d_padded(x4, w4, {1, c.stride[1]}, {1, c.dilation[1]}, {{0, 0}, c.pads[1]}, c.groups)
  return finish(c, y:squeeze(3))
end

function conv.conv2d(x, w, opts)
  local c = prepare("tapestry.nn.conv2d", 2, x, w, opts)
  return finish(c, conv2d_padded(c.x, c.w, c.stride, c.dilation, c.pads, c.groups))
end

function conv.conv3d(x, w, opts)
  local c = prepare("tapestry.nn.conv3d", 3, x, w, opts)
  local xp, wt = c.x, c.w
  if c.pads[1][1] > 0 or c.pads[1][2] > 0 then
    xp = xp:pad{{0, 0}, {0, 0}, c.pads[1], {0, 0}, {0, 0}}
  end
  local n, ch, d, h, wd = xp:size(1), xp:size(2), xp:size(3), xp:size(4), xp:size(5)
  local o, kd = wt:size(1), wt:size(3)
  local sd, dd, g = c.stride[1], c.dilation[1], c.groups
  local od = (d - dd * (kd - 1) - 1) // sd + 1
  -- Tap t reads depths t*dd + 1, then every sd-th: {N, C, OD, H, W}.
  local taps = {}
  for t = 0, kd - 1 do
    local first = t * dd + 1
    taps[t + 1] = xp[{{}, {}, {first, first + (od - 1) * sd, sd}, {}, {}}]
  end
  local stacked = tp.stack(taps, 3)                                -- {N, C, KD, OD, H, W}
  -- Each group's channels stay together: {N, g, C/g, KD, OD, H, W} -> {N, OD, g, KD, C/g, H, W}.
  local cols = stacked:reshape{n, g, ch // g, kd, od, h, wd}:permute{1, 5, 2, 4, 3, 6, 7}
  cols = cols:reshape{n * od, ch * kd, h, wd}
  local w2 = wt:permute{1, 3, 2, 4, 5}:reshape{o, kd * wt:size(2), wt:size(4), wt:size(5)}
  local y = conv2d_padded(cols, w2, {c.stride[2], c.stride[3]}, {c.dilation[2], c.dilation[3]},
                          {c.pads[2], c.pads[3]}, g)                -- {N*OD, O, OH, OW}
  y = y:reshape{n, od, o, y:size(3), y:size(4)}:permute{1, 3, 2, 4, 5}
  return finish(c, y)
end

return conv
