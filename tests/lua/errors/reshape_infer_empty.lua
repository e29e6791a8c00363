-- User mistake: reshape with -1 beside a size 0: any size would do, so numpy refuses it too.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("reshape_infer_empty", function() return tp.zeros{0, 3}:reshape(-1, 0) end,
  "tp.reshape", "{0,3}", "{-1,0}", "ambiguous")
check.summary()
