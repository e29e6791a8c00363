-- User mistake: tp.eye declared zero in a tile its diagonal crosses.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("tiles_eye_diagonal", function()
  return tp.eye(8, {tiles = {4, 4}, nonzero = tp.tensor({{true, false}, {false, false}})})
end, "tp.eye", "the identity's diagonal crosses tile {2,2}, which nonzero declares zero")
check.summary()
