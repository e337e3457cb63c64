/* layer c (highest): calls b (one down), a (two down) and c_twin (same layer). */
int b_mid(int x);
int a_base(int x);
int c_twin(int x);

int c_top(int x) { return b_mid(x) + a_base(x) + c_twin(x); }
