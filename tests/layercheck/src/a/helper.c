/* layer a */
int a_helper(int x) { return x * 2; }
