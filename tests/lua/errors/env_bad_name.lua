-- User mistake: binding a name that is not an identifier.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("env_bad_name", function() tp.env["not a name"] = tp.ones{2} end,
  "not a name")
check.summary()
