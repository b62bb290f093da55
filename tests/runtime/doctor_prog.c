/* tests/runtime/doctor_prog.c MODE [procs|threads] - four ranks staging the hangs NCCL users meet (issue 22),
 * for doctor_test.sh. Ranks 0-2 call ncclAllReduce(1 Mi floats); rank 3:
 *   count    passes half the count
 *   coll     calls ncclAllGather instead
 *   left     destroys its communicator without calling
 *   dead     its process dies without calling (procs only: _exit)
 *   missing  sleeps 8 s, then calls (late, not wrong)
 *   ok       calls it like the others
 *   nodestroy  every rank calls it and ends without destroying its communicator (the process exits)
 * MODE-small (e.g. left-small) all-reduces 1 float instead: its protocol's connections are made at its
 * first call (NCCL's runtime connect), so the others wait for rank 3 to connect rather than for data.
 * Ranks are threads of this process or (procs, the default) forked processes; with DOCTOR_HOSTS=2 the
 * processes play two hosts. Each rank prints one
 * line, "rank R: <error string>: <last error>" and "sum right" when its result is exact; the exit
 * status is 0 when every live rank returned (whatever it returned), so a hang shows as a time-out. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cclab/cclab.h>
#include <nccl.h>

enum { kRanks = 4, kCount = 1 << 20 };
static ncclUniqueId id;
static const char* mode = "ok";
static size_t count = kCount;

static void rank_main(int r) {
  ncclComm_t comm;
  /* DOCTOR_HOSTS=2 (processes): ranks 0-1 and 2-3 play two hosts (NCCL_HOSTID), joined by NET/Socket. */
  const char* hosts = getenv("DOCTOR_HOSTS");
  if (hosts != NULL && strcmp(hosts, "2") == 0) setenv("NCCL_HOSTID", r < 2 ? "doctor-host-a" : "doctor-host-b", 1);
  float* buf = malloc(sizeof(float) * kCount);
  float* out = malloc(sizeof(float) * kCount * kRanks);
  for (size_t i = 0; i < count; ++i) buf[i] = (float)(r + 1);
  ncclResult_t res = ncclCommInitRank(&comm, kRanks, id, r);
  char error[1024] = "";
  if (res != ncclSuccess) {
    printf("rank %d: init: %s: %s\n", r, ncclGetErrorString(res), ncclGetLastError(NULL));
    return;
  }
  const int odd = r == kRanks - 1;
  if (odd && strcmp(mode, "left") == 0) {
    usleep(300 * 1000);
    ncclCommDestroy(comm);
    printf("rank %d: left\n", r);
    fflush(stdout);
    return;
  }
  if (odd && strcmp(mode, "dead") == 0) {
    usleep(300 * 1000);
    _exit(3);
  }
  if (odd && strcmp(mode, "missing") == 0) sleep(8);
  if (odd && strcmp(mode, "coll") == 0) {
    res = ncclAllGather(buf, out, count, ncclFloat, comm, NULL);
  } else {
    const size_t n = odd && strcmp(mode, "count") == 0 ? count / 2 : count;
    res = ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, NULL);
  }
  if (res != ncclSuccess) snprintf(error, sizeof error, "%s", ncclGetLastError(comm));
  int right = res == ncclSuccess;
  for (size_t i = 0; right && i < count; ++i) right = buf[i] == 10.0f;
  printf("rank %d: %s: %s%s\n", r, ncclGetErrorString(res), error, right ? "sum right" : "");
  fflush(stdout);
  if (res != ncclSuccess) ncclCommAbort(comm);
  else if (strcmp(mode, "nodestroy") != 0) ncclCommDestroy(comm);
  free(buf);
  free(out);
}

static void* thread_main(void* arg) {
  rank_main((int)(size_t)arg);
  return NULL;
}

int main(int argc, char** argv) {
  static char name[64];
  if (argc > 1) {
    snprintf(name, sizeof name, "%s", argv[1]);
    char* dash = strstr(name, "-small");
    if (dash != NULL) {
      *dash = '\0';
      count = 1;
    }
    mode = name;
  }
  const int threads = argc > 2 && strcmp(argv[2], "threads") == 0;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
  if (threads) {
    pthread_t t[kRanks];
    for (int r = 0; r < kRanks; ++r) pthread_create(&t[r], NULL, thread_main, (void*)(size_t)r);
    for (int r = 0; r < kRanks; ++r) pthread_join(t[r], NULL);
    return 0;
  }
  pid_t pid[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    fflush(stdout);
    pid[r] = fork();
    if (pid[r] == 0) {
      rank_main(r);
      exit(0);  /* exit handlers run, as in a program that returns from main */
    }
  }
  for (int r = 0; r < kRanks; ++r) waitpid(pid[r], NULL, 0);
  return 0;
}
