-- A script whose error must reach stderr with a traceback, and exit status 1.
local function inner() error("broken on purpose") end
print("before")
inner()
print("never printed")
