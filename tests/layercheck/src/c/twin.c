/* layer c: ext_hook here is static (file-local), so it is no definition of
 * the ext_hook that layer a references. */
static int ext_hook(int x) { return x + 3; }

int c_twin(int x) { return ext_hook(x); }
