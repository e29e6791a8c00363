-- Prints what a script sees of its command line: `...` and the global `arg`.
print("n=" .. select("#", ...), ...)
print("arg[1]=" .. arg[1], "arg[2]=" .. arg[2], "#arg=" .. #arg)
print("arg[-1]=" .. arg[-1], "arg[-2]=" .. arg[-2])
print("pre=" .. pre)
