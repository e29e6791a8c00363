-- User mistake: tp.checkpoint() with no directory, given neither here nor with --checkpoint-dir.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("checkpoint_no_dir", function() tp.checkpoint() end, "no checkpoint directory")
check.mistake("checkpoint_bad_dir", function() tp.checkpoint(42) end, "tp.checkpoint")
check.summary()
