/* layer a (lowest): a_base() calls a_helper() in the same layer, plus
 * memset() and ext_hook(), which the tree does not define (like libc). */
#include <string.h>

int a_helper(int x);
int ext_hook(int x);
int a_table[4]; /* data symbol, used from layer b */

int a_base(int x)
{
	memset(a_table, 0, sizeof(a_table));
	return a_helper(x) + ext_hook(x);
}
