-- User mistake: conv2d weights whose channels do not match x's (with and without groups).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("window_conv_channels.1", function() return tp.conv2d(tp.ones{1, 3, 5, 5}, tp.ones{2, 4, 3, 3}) end,
  "tp.conv2d", "{2,4,3,3}", "{1,3,5,5}", "needs 3 channels")
check.mistake("window_conv_channels.2", function()
  return tp.conv2d(tp.ones{1, 4, 5, 5}, tp.ones{3, 2, 3, 3}, {groups = 2}) end,
  "tp.conv2d", "groups = 2", "3 output channels")
check.mistake("window_conv_channels.3", function() return tp.conv2d(tp.ones{1, 3, 2, 5}, tp.ones{2, 3, 3, 3}) end,
  "tp.conv2d", "window of 3", "H of size 2")
check.mistake("window_conv_channels.4", function()
  return tp.conv2d(tp.ones{1, 3, 5, 5}, tp.ones{2, 3, 3, 3}, {stride = {1, 0}}) end,
  "tp.conv2d", "stride must be at least 1, got 0")
check.summary()
