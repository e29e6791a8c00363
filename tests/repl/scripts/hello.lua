-- Loaded with :load; leaves a global behind to show it ran inside the session.
greeting = "hello from " .. "hello.lua"
