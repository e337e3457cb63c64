/* layer b: calls down into layer a (function and data). */
int a_base(int x);
extern int a_table[4];

int b_mid(int x) { return a_base(x) + a_table[0]; }
