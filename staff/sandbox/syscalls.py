"""The review of every system call against one class: a kernel object that carries data between
grades or out of one. It is the worker's seccomp filter: `syscall_filter.seccomp_program` is
an allow-list built from these tables, and a call that is in none of them (one a newer kernel
adds) fails with ENOSYS, as on a kernel without it, so code that probes for it falls back.

Each group below is (reason, names). ALLOWED: why the call reaches nothing another grade or the
world can see. CHECKED: allowed with its arguments checked by the filter. REFUSED: why it is
refused (with EPERM, as Docker's profile refuses, unless the group says ENOSYS). A file is not a
kernel object in this sense: which files the worker may open is Landlock's and the tmpfs's job
(docs/sandbox.md); here a call that takes a path is reviewed for what
else it reaches. `staff/tests/test_syscall_review.py` fails when a call of the architecture's table
is allowed without a line here, so whoever allows one writes why.

Not closed here, and said so in docs/sandbox.md: channels of timing and shared state that need two
cooperating grades and no object (CPU load, the page cache of the shared Python environment, futex
wake-ups on a read-only mapping of the same file), as with every side channel.
Copied into the worker's folder; imports only the standard library and syscall_numbers.py.
"""

from __future__ import annotations

import errno

try:
    from .syscall_numbers import NUMBERS
except ImportError:  # in the worker's folder, beside it
    from syscall_numbers import NUMBERS

ALLOWED: list[tuple[str, str]] = [
    ("I/O on a descriptor the worker holds (its pipes to the grader, its own pairs, files Landlock let it open)",
     "read write pread64 pwrite64 readv writev preadv pwritev pwritev2 lseek close close_range dup dup2 "
     "dup3 copy_file_range readahead fsync fdatasync syncfs "
     "sync_file_range ftruncate fstat fstatfs getdents getdents64 fchdir"),
    ("a file by path: Landlock decides which (read the environment, write its own folders); nothing else is "
     "named",
     "creat stat lstat newfstatat statx access faccessat faccessat2 readlink "
     "readlinkat getcwd chdir mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat symlink "
     "symlinkat umask truncate statfs "
     "execve execveat"),
    ("reading extended attributes of a file it may reach (shutil.copy2 copies them, and takes a refusal to set "
     "them as a file system without them)",
     "getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr"),
    ("its own memory (private, or a mapping of a file it opened; counted by RLIMIT_AS and the memory group; "
     "mmap's flags are CHECKED)",
     "brk munmap mremap mprotect msync mincore mlock mlock2 munlock mlockall munlockall membarrier "
     "pkey_mprotect pkey_alloc pkey_free mbind set_mempolicy get_mempolicy set_mempolicy_home_node"),
    ("its own processes and threads, and waiting for them (clone's flags are CHECKED)",
     "fork vfork exit exit_group wait4 waitid set_tid_address set_robust_list rseq futex futex_waitv "
     "futex_wake futex_wait futex_requeue arch_prctl"),
    ("ids and limits of its own (setting ids needs a capability it has not; setpgid and setsid reach only its "
     "own children and session; getpgid, getsid and capget of another pid read, and change nothing)",
     "getpid getppid gettid getpgid getpgrp getsid setsid setpgid getuid geteuid getgid getegid getresuid "
     "getresgid getgroups capget capset getrlimit setrlimit getrusage times uname sysinfo getrandom "
     "getcpu"),
    ("reading scheduling settings (of any pid: they change nothing; libgomp reads its threads' affinity by tid); "
     "the calls that change them are CHECKED",
     "sched_yield sched_getaffinity sched_getparam sched_getscheduler sched_getattr sched_get_priority_max "
     "sched_get_priority_min sched_rr_get_interval"),
    ("signals to a pid or process group: no filter can tell the worker's own pids from others', and Python needs "
     "them for its children (subprocess, multiprocessing) and itself (raise, abort: tgkill); the PID namespace, "
     "Landlock's signal scope (ABI 6) or the worker's own uid keeps them in; where none holds (an ordinary user "
     "without user namespaces, Landlock before ABI 6) they reach the grader's uid (docs/sandbox.md, \"Grading as an "
     "ordinary user\"); kill(-1) is CHECKED",
     "tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_open pidfd_send_signal"),
    ("signals: its own handlers (SIGCHLD's is CHECKED), masks and timers",
     "rt_sigprocmask rt_sigreturn rt_sigpending rt_sigtimedwait rt_sigsuspend sigaltstack pause "
     "alarm getitimer setitimer signalfd signalfd4 restart_syscall"),
    ("clocks and timers: read, or timers of its own (setting the clock needs a capability, and is REFUSED)",
     "nanosleep clock_nanosleep clock_gettime clock_getres gettimeofday time timer_create timer_settime "
     "timer_gettime timer_getoverrun timer_delete timerfd_create timerfd_settime timerfd_gettime"),
    ("waiting on descriptors, and objects that live only as a descriptor of its own (no name, no path)",
     "poll ppoll select pselect6 epoll_ctl epoll_wait epoll_pwait epoll_pwait2 "
     "eventfd eventfd2 pipe pipe2"),
    ("on the only sockets there are, its own stream or seqpacket pairs (which ignore or refuse an address)",
     "sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg shutdown getsockname getpeername getsockopt"),
]

# name: what the filter checks, for calls allowed only with some arguments (see syscall_filter.seccomp_program).
CHECKED: dict[str, str] = {
    "socket": "refused for every family (EAFNOSUPPORT): path, abstract, netlink, vsock, packet, internet; while a "
              "GPU grade's child starts CUDA, AF_UNIX is allowed (the driver connects to its daemons), and refused "
              "again before any student code runs",
    "socketpair": "refused (EPERM): a pair's buffers are kernel memory only a memory group counts, and forked "
                  "children each fill pairs up to their own open-file limit (4.51 GiB held as an ordinary user); "
                  "while a GPU grade's child starts CUDA, AF_UNIX pairs are allowed, and refused again before any "
                  "student code runs",
    # Measured as an ordinary user (no memory group), 508 pairs at the open-file limit of 1024: 226 MiB
    # queued at the default buffer sizes, 7,973 MiB with each buffer raised to the kernel's wmem_max.
    "setsockopt": "not SO_SNDBUF, SO_RCVBUF or their FORCE forms: socket buffers are kernel memory no address-space "
                  "limit counts, so their size stays the default and the open-file limit bounds what each process "
                  "holds (the sum over forked processes: the worker's memory group, where it has one)",
    "clone": "no CLONE_NEW* flag: a new user namespace would give the worker every capability inside it; no "
             "thread (CLONE_THREAD) without the process's file table and working folder (CLONE_FILES, CLONE_FS): "
             "the zygote counts the files, pipes and removed folders a process holds from its one table and "
             "working folder (pthreads always share both)",
    "fallocate": "mode 0 only (EOPNOTSUPP else, on which a caller writes instead; glibc's posix_fallocate uses 0): "
                 "blocks kept past a file's end (FALLOC_FL_KEEP_SIZE) or ranges inserted escape the file-size "
                 "limit, which bounds what the zygote counts for a deleted file it cannot measure",
    "ioctl": "not TIOCSTI or TIOCLINUX (typing into a terminal), nor an inode's flags, attributes, version, "
             "verity or shared extents (FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR, FS_IOC_SETVERSION, "
             "FS_IOC_ENABLE_VERITY, FICLONE, FICLONERANGE, FIDEDUPERANGE: the kernel asks only that the caller "
             "own the file, which as an ordinary user it does for the grader's); the rest acts on a descriptor "
             "it holds",
    "fcntl": "no record lock, lease or dnotify: a lock on a file of the shared environment is seen by every "
             "grade (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_NOTIFY); no owner or signal "
             "for a descriptor's I/O (F_SETOWN, F_SETOWN_EX, F_SETSIG), with which the kernel signals the owner, "
             "any pid, without a kill call; no pipe resize (F_SETPIPE_SZ): a pipe's pages count toward the "
             "uid's fs.pipe-user-pages-soft, which an ordinary user's worker shares with the TA's processes; "
             "no O_DIRECT through F_SETFL (EINVAL: see open)",
    "prctl": "not PR_SET_SECCOMP: a filter stacked through prctl is kernel memory as seccomp's is (see its line); "
             "not PR_SET_DUMPABLE 0: the zygote reads each process's open files and maps, which a process not "
             "dumpable closes to it; not PR_FUTEX_HASH (EINVAL, as before Linux 6.16): a private futex hash of "
             "2**24 slots is 1.28 GiB of kernel memory a process, in no RSS and under no limit but a memory group; "
             "not PR_SET_VMA (EINVAL, as a kernel built without it answers): a name given to a mapping replaces "
             "the one the zygote counts shared memory by (see mmap)",
    "mmap": "not MAP_SHARED (or MAP_SHARED_VALIDATE) with MAP_ANONYMOUS, in a CPU grade: shared memory with no "
            "file keeps its pages when every page table drops them, so no RSS shows it, and unmapped but for its "
            "first page it shows in no process's maps at its size; /dev/zero, the other way to it, is read-only "
            "under Landlock, where a shared mapping holds nothing. A GPU grade's children allow it (the CUDA "
            "driver's pinned host memory may be made so: not yet tried on a GPU) and the zygote counts it there",
    # Problem 9's tests measure what a call read of a token file as the larger of the file's pages in the page
    # cache and the rchar of the worker's processes (adapters._instrument.FileReads); these keep both whole.
    "open": "not O_DIRECT (EINVAL, as a file system without direct I/O answers): a direct read leaves nothing in "
            "the page cache, and as an ordinary user (no rchar to read) nothing else would show it",
    "openat": "not O_DIRECT (EINVAL): see open",
    "preadv2": "not RWF_DONTCACHE (EOPNOTSUPP, as before Linux 6.14): the pages read leave the page cache after "
               "the read (see open)",
    "madvise": "not MADV_COLD or MADV_PAGEOUT, answered as done and not followed (advice a kernel may ignore): "
               "they push a file's pages out of the page cache, where a read through a mapping shows (see open)",
    "rt_sigaction": "SIGCHLD's action is answered as done and left at the default: a parent that ignores SIGCHLD "
                    "(SIG_IGN, SA_NOCLDWAIT) has the kernel release its children at exit, their rchar counted "
                    "nowhere; the filter cannot read the new action, so a handler is left unset too (nothing a grade "
                    "runs sets one: torch's DataLoader would, for worker processes that need sockets, refused here)",
    # Without a PID namespace another process of the same uid (a batch neighbour, the grader, the TA's shell)
    # is in reach of these by pid; pid 0 means the caller, and the filter cannot know the caller's pid.
    "prlimit64": "pid 0 only (itself): another pid's limits are another process's (glibc's setrlimit passes 0)",
    "sched_setaffinity": "pid 0 only (itself): another pid's CPUs are another process's",
    "sched_setparam": "pid 0 only (itself): another pid's priority is another process's",
    "sched_setscheduler": "pid 0 only (itself): another pid's policy is another process's",
    "sched_setattr": "pid 0 only (itself): another pid's policy is another process's",
    "getpriority": "PRIO_PROCESS and who 0 only (itself, as os.nice asks): not a process group or a user",
    "setpriority": "PRIO_PROCESS and who 0 only (itself): not another pid, a process group or every process "
                   "of a user (the grader's, without a uid of its own)",
    "kill": "not pid -1 (every process it may signal) unless the worker is its PID namespace's init, where -1 "
            "is the namespace; another pid or group is left to the PID namespace, Landlock and the uid, as "
            "tgkill is (see its line)",
}

# Allowed while a GPU grade's worker child starts CUDA, before any student code: the driver connects to
# its daemons (nvidia-persistenced, MPS) over unix sockets and makes a memfd as cuInit runs (error 304
# without it; NVIDIA/OpenShell issue 1696). The child then stacks the CPU grade's filter, which refuses
# them again (worker.confine_child).
GPU_ONLY = "bind listen connect accept accept4 flock memfd_create landlock_create_ruleset landlock_add_rule " \
    "landlock_restrict_self seccomp".split()
# Allowed in a zygote (which runs no student code) whose children confine themselves further before any:
# a Landlock domain of each child's own, so that no signal of a child's reaches the zygote and its
# watch (a child stopped it with SIGSTOP and held 1.49 GiB of page tables unwatched), then this filter.
CHILD_CONFINES = "landlock_create_ruleset landlock_add_rule landlock_restrict_self seccomp".split()

REFUSED: list[tuple[str, int, str]] = [
    ("System V IPC: objects found by a key anyone can guess, outliving their process; refused in every mode, "
     "the IPC namespace's or not (Docker, --no-namespaces, an ordinary user)", errno.EPERM,
     "shmget shmat shmctl shmdt semget semop semctl semtimedop msgget msgsnd msgrcv msgctl"),
    ("POSIX message queues: named objects of /dev/mqueue, shared by every grade outside an IPC namespace",
     errno.EPERM, "mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr"),
    ("kernel keys: no namespace holds them; a key of the user keyring can be made readable by all and found "
     "in /proc/keys by a later grade", errno.EPERM, "add_key request_key keyctl"),
    ("io_uring: it opens files and sockets past this filter", errno.EPERM,
     "io_uring_setup io_uring_enter io_uring_register"),
    ("another process's memory, files or pages (a worker of the same uid, without a PID namespace); move_pages "
     "and migrate_pages act on any pid, and nothing the worker runs needs them for itself", errno.EPERM,
     "ptrace process_vm_readv process_vm_writev process_madvise process_mrelease pidfd_getfd kcmp "
     "get_robust_list move_pages migrate_pages"),
    ("I/O priority: ioprio_set reaches another pid, a process group or a user's every process, and nothing the "
     "worker runs sets or reads it", errno.EPERM, "ioprio_set ioprio_get"),
    ("kernel-side programs and event streams: BPF maps pinned in bpffs outlive the process; perf events, "
     "fanotify and inotify see what other processes do to files they share (the environment)", errno.EPERM,
     "bpf perf_event_open fanotify_init fanotify_mark inotify_init inotify_init1 inotify_add_watch "
     "inotify_rm_watch"),
    ("userfaultfd: a tool for racing the kernel", errno.EPERM, "userfaultfd"),
    ("more seccomp filters: each is kernel memory no limit counts without a memory group (3,600 filters a "
     "thread, 7-8 KiB each: 33 children held 0.76 GiB as an ordinary user), and the worker is filtered "
     "already; a GPU grade's child stacks the CPU grade's filter with it (prctl's PR_SET_SECCOMP too: see "
     "its line)", errno.EPERM, "seccomp"),
    ("files opened by handle, past every path check (Landlock's included)", errno.EPERM,
     "name_to_handle_at open_by_handle_at"),
    ("the kernel log: a message carries a name the worker sets, readable where dmesg is open", errno.EPERM,
     "syslog"),
    ("memory outside every process's RSS and RLIMIT_AS (memfd), or hidden from the kernel; a worker needs "
     "neither (torch on the CPU and the reference's grade make none)", errno.EPERM, "memfd_create memfd_secret"),
    ("namespaces and mounts: setns joins another's namespace; a new one (or a mount) changes what the "
     "worker's paths reach", errno.EPERM,
     "unshare setns mount umount2 pivot_root chroot open_tree open_tree_attr move_mount fsopen fsconfig fsmount "
     "fspick mount_setattr statmount listmount"),
    ("the machine's administration (each needs a capability the worker has not; none is needed)", errno.EPERM,
     "reboot kexec_load kexec_file_load init_module finit_module delete_module swapon swapoff acct quotactl "
     "quotactl_fd sethostname setdomainname settimeofday clock_settime adjtimex clock_adjtime iopl ioperm "
     "vhangup sync"),
    ("changing its ids: without a capability only among its own; nothing needs it", errno.EPERM,
     "setuid setgid setreuid setregid setresuid setresgid setfsuid setfsgid setgroups"),
    ("special files (FIFOs, devices) in its folder, which a root test might open and block on", errno.EPERM,
     "mknod mknodat"),
    ("legacy or x86 oddities nothing needs: old modules, LDT, TLS descriptors, personality, old AIO, "
     "unimplemented numbers", errno.EPERM,
     "create_module get_kernel_syms query_module nfsservctl _sysctl uselib ustat sysfs lookup_dcookie "
     "modify_ldt set_thread_area get_thread_area personality remap_file_pages afs_syscall tuxcall security "
     "getpmsg putpmsg vserver epoll_ctl_old epoll_wait_old io_setup io_destroy io_getevents io_submit io_cancel "
     "io_pgetevents"),
    ("clone3: its flags are in memory the filter cannot read; ENOSYS makes glibc fall back to clone, whose "
     "flags it checks (as Docker's profile does)", errno.ENOSYS, "clone3"),
    ("openat2: its flags are in memory the filter cannot read (O_DIRECT: see open); ENOSYS, as before Linux 5.6, "
     "and callers open with openat, whose flags it checks", errno.ENOSYS, "openat2"),
    ("advice on a file's page cache, answered as done and not followed (POSIX lets a system ignore it): "
     "POSIX_FADV_DONTNEED drops a file's pages from the page cache, where what a call read of a token file "
     "shows (see open)", 0, "fadvise64"),
    ("newer calls nothing here uses yet; ENOSYS, as a kernel without them says, so code falls back: page-cache "
     "statistics of a shared file (a channel), security-module attributes, sealing, shadow stacks, "
     "attributes by *at", errno.ENOSYS,
     "cachestat lsm_get_self_attr lsm_set_self_attr lsm_list_modules mseal map_shadow_stack setxattrat "
     "getxattrat listxattrat removexattrat file_getattr file_setattr"),
    ("socket calls that need a socket() of the worker's own or name an address; allowed in a GPU grade",
     errno.EPERM, "bind listen connect accept accept4"),
    ("flock: a lock on a file of the shared environment is seen by every grade; allowed in a GPU grade "
     "(CUDA's caches lock their files)", errno.EPERM, "flock"),
    ("vmsplice: a pipe keeps the whole page each piece it is given lies on (a 2 MiB huge page for 4 KiB: one "
     "process held 6 GiB under an address-space limit of 4 GiB), kernel memory only a memory group counts; "
     "nothing the worker runs needs it", errno.EPERM, "vmsplice"),
    ("splice, tee and sendfile into a pipe: the pipe keeps the whole page-cache folio each byte lies on (2 MiB "
     "on ext4: two children held 1 GiB), kernel memory only a memory group counts; shutil.copyfile falls back "
     "to reads and writes when sendfile fails at the start", errno.EPERM, "splice tee sendfile"),
    ("epoll instances: a watch outlives its descriptor number, so a process of 256 files keeps millions "
     "(1 GiB of kernel memory; the uid's limit, shared with the grading user's every program, used up); "
     "subprocess and multiprocessing wait with poll", errno.EPERM, "epoll_create epoll_create1"),
    ("Landlock domains: each one a process makes is a copy of its rules in kernel memory, kept by every file "
     "it opens, which only a memory group counts (forked children held 1 GiB); the worker is confined before "
     "any student code runs. Allowed in the zygote, whose children set their own Landlock, then stack this "
     "filter", errno.EPERM, "landlock_create_ruleset landlock_add_rule landlock_restrict_self"),
    ("a file's mode and times, answered as done (errno 0) and left as they were: Landlock has no right for "
     "them, so they would reach every file of the worker's uid (the TA's, as an ordinary user: the grader's "
     "folders, /run/user/UID), and shutil.copy and copy2 set them on their copies, so a refusal would fail "
     "honest code", 0, "chmod fchmod fchmodat fchmodat2 utime utimes utimensat futimesat"),
    ("changing a file's owner or extended attributes: Landlock has no right for either, so they would reach "
     "every file of the worker's uid (the TA's, as an ordinary user: the grader's folders, /run/user/UID); "
     "a worker cannot give a file away, and an attribute is a channel between grades", errno.EPERM,
     "chown lchown fchownat fchown setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr"),
]


def review() -> dict[str, tuple[str, str, int | None]]:
    """Every reviewed call: name -> ("allowed" / "checked" / "refused", reason, errno when refused).
    Raises ValueError if a name is reviewed twice or is not in the number table."""
    found: dict[str, tuple[str, str, int | None]] = {}
    entries = [("allowed", reason, None, names.split()) for reason, names in ALLOWED] + \
        [("checked", reason, None, [name]) for name, reason in CHECKED.items()] + \
        [("refused", reason, code, names.split()) for reason, code, names in REFUSED]
    for verdict, reason, code, names in entries:
        for name in names:
            if name in found:
                raise ValueError(f"{name} is reviewed twice")
            if name not in NUMBERS:
                raise ValueError(f"{name} is not in syscall_numbers.NUMBERS")
            found[name] = (verdict, reason, code)
    return found


def numbers(machine: str) -> dict[str, int]:
    """Every call of the table that `machine` ("x86_64" or "aarch64") has, with its number there."""
    column = ("x86_64", "aarch64").index(machine)
    return {name: pair[column] for name, pair in NUMBERS.items() if pair[column] is not None}
