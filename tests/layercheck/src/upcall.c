/* Added to layer a only in the "upward" tree: the lowest layer calls the
 * highest one, which the checker must report. */
int c_top(int x);

int a_upcall(int x) { return c_top(x); }
