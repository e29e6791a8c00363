// The one doctest main, kept apart so that test files compile fast.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
