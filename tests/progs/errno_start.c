/*
 * errno_start: prints the errno that main() starts with. A preload
 * library's constructor runs before main and must leave errno as the
 * loader did (a mkdir of an existing trace directory once left EEXIST).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>

int main(void)
{
	int e = errno;
	printf("errno at main %d\n", e);
	return 0;
}
