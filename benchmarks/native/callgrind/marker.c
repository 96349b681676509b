/* What benchmarks/callgrind.py counts: the work between kcb_start and kcb_stop, in a process run under
 * valgrind --tool=callgrind --collect-atstart=no. kcb_start zeroes the counters and turns collection on,
 * kcb_stop turns it off and dumps them under a label, so each dump holds one measured call. (Collection is
 * toggled by client requests, not by --toggle-collect on a function: called through ctypes' libffi, a
 * function's own frame is not seen as a call, and nothing would be collected.) */
#include <valgrind/callgrind.h>

void kcb_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
void kcb_stop(const char *label) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(label); }
