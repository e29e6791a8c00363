-- User mistake: binding a name to an expression that fails: the old value stays.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("env_bind_error", function() tp.env.keep = tp.ones{2} + tp.ones{3} end,
  "{2}", "{3}")
check.summary()
