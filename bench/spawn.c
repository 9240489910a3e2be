/*
 * spawn.c: the physical limit of a foreground exec. For each line read on
 * stdin it runs `SHELL -c true` with posix_spawn, waits for it with waitpid,
 * and prints the nanoseconds that took (CLOCK_MONOTONIC) on stdout. The
 * child gets this process's environment and /dev/null as stdin, stdout and
 * stderr: no pipes, no output to collect, nothing but the spawn and the wait.
 *
 *   cc -O2 -o spawn bench/spawn.c
 *   printf '\n\n\n' | ./spawn /bin/sh
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
	const char *shell = argc > 1 ? argv[1] : "/bin/sh";
	char *args[] = {(char *)shell, "-c", "true", NULL};
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0) {
		perror("open /dev/null");
		return 1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	for (int fd = 0; fd < 3; fd++)
		posix_spawn_file_actions_adddup2(&fa, null, fd);
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		long long t0 = now_ns();
		pid_t pid;
		int err = posix_spawn(&pid, shell, &fa, NULL, args, environ);
		if (err) {
			fprintf(stderr, "posix_spawn %s: %s\n", shell, strerror(err));
			return 1;
		}
		int st;
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				perror("waitpid");
				return 1;
			}
		}
		long long el = now_ns() - t0;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "%s -c true: status %d\n", shell, st);
			return 1;
		}
		printf("%lld\n", el);
	}
	return 0;
}
