-- User mistake: pads that do not match x, an unknown mode, reflecting more than the dim.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("window_pad_bad.1", function() return tp.ones{2, 3}:pad({1, 1}) end,
  "tp.pad", "each of the 2 dimensions", "got 2 numbers")
check.mistake("window_pad_bad.2", function() return tp.ones{2, 3}:pad({1, 1, 0, 0}, {mode = "wrap"}) end,
  "tp.pad", "unknown mode 'wrap'")
check.mistake("window_pad_bad.3", function() return tp.ones{2, 3}:pad({{2, 0}, {0, 0}}, {mode = "reflect"}) end,
  "tp.pad", "reflect padding of 2", "size 2")
check.mistake("window_pad_bad.4", function() return tp.ones{2, 3}:pad({{1, 0}, {0, 0}}, {value = 0.5, mode = "periodic"}) end,
  "tp.pad", "'value' only applies")
check.mistake("window_pad_bad.5", function() return tp.maxpool2d(tp.ones{1, 1, 4, 4}, 2, {padding = 2}) end,
  "tp.maxpool2d", "at most half the kernel size 2")
check.summary()
