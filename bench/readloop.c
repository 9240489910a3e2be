/*
 * readloop.c: the physical limit of pipe ingest. It runs `SHELL -c CMDLINE`
 * with its stdout on a pipe enlarged to PIPE_BYTES (F_SETPIPE_SZ; the kernel
 * may round it up, or refuse past fs.pipe-max-size), reads the pipe to EOF
 * with a 1 MiB buffer, discarding the data, and waits for the child. It
 * prints one line: the bytes read, the nanoseconds from the spawn to the
 * reaped exit (CLOCK_MONOTONIC), the CPU nanoseconds of this process and the
 * reaped child (user + system), and the pipe size it got.
 *
 *   cc -O2 -o readloop bench/readloop.c
 *   ./readloop 1048576 /bin/sh 'head -c 67108864 /dev/zero'
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long cpu_ns(int who) {
	struct rusage ru;
	getrusage(who, &ru);
	return ((long long)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       ((long long)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: readloop PIPE_BYTES SHELL CMDLINE\n");
		return 2;
	}
	int want = atoi(argv[1]);
	char *args[] = {argv[2], "-c", argv[3], NULL};
	static char buf[1 << 20];
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("pipe2");
		return 1;
	}
	int got = fcntl(p[0], F_SETPIPE_SZ, want);
	if (got < 0)
		got = fcntl(p[0], F_GETPIPE_SZ);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	long long c0 = cpu_ns(RUSAGE_SELF) + cpu_ns(RUSAGE_CHILDREN);
	long long t0 = now_ns();
	pid_t pid;
	int err = posix_spawn(&pid, argv[2], &fa, NULL, args, environ);
	if (err) {
		fprintf(stderr, "posix_spawn %s: %s\n", argv[2], strerror(err));
		return 1;
	}
	close(p[1]);
	long long total = 0;
	for (;;) {
		ssize_t n = read(p[0], buf, sizeof buf);
		if (n > 0) {
			total += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("read");
			return 1;
		}
		break;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			return 1;
		}
	}
	long long el = now_ns() - t0;
	long long cpu = cpu_ns(RUSAGE_SELF) + cpu_ns(RUSAGE_CHILDREN) - c0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child status %d\n", st);
		return 1;
	}
	printf("%lld %lld %lld %d\n", total, el, cpu, got);
	return 0;
}
