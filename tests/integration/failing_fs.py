"""A disk that starts failing: a FUSE file system over a backing folder that passes every call
through until FAIL_AFTER bytes have been written, then answers every call that would change
the disk (write, truncate, fsync, create, rename, unlink, mkdir) with EIO, as a disk whose
writes fail does, while reads go on working.

  /usr/bin/python3 failing_fs.py BACKING MOUNTPOINT FAIL_AFTER

Runs in the foreground until unmounted (umount MOUNTPOINT). Uses Debian's python3-fusepy, which
/usr/bin/python3 has (scripts/bootstrap installs it)."""

import errno
import os
import sys
import threading

from fusepy import FUSE, FuseOSError, Operations


class FailingDisk(Operations):
    def __init__(self, backing, fail_after):
        self.backing = backing
        self.fail_after = fail_after
        self.written = 0
        self.mutex = threading.Lock()  # not "lock": that is a FUSE operation

    def _path(self, path):
        return os.path.join(self.backing, path.lstrip("/"))

    def _change(self):
        """Raises EIO once the disk has failed."""
        if self.written >= self.fail_after:
            raise FuseOSError(errno.EIO)

    # Reads and metadata: always through.
    def getattr(self, path, fh=None):
        st = os.lstat(self._path(path))
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode",
                                            "st_mtime", "st_nlink", "st_size", "st_uid")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._path(path))

    def open(self, path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_TRUNC):
            self._change()
        return os.open(self._path(path), flags)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def release(self, path, fh):
        os.close(fh)

    def flush(self, path, fh):
        return 0

    def statfs(self, path):
        st = os.statvfs(self._path(path))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize",
                                            "f_favail", "f_ffree", "f_files", "f_flag",
                                            "f_frsize", "f_namemax")}

    def access(self, path, amode):
        if not os.access(self._path(path), amode):
            raise FuseOSError(errno.EACCES)

    # What changes the disk: through until it fails.
    def write(self, path, data, offset, fh):
        with self.mutex:
            self._change()
            n = os.pwrite(fh, data, offset)
            self.written += n
            return n

    def create(self, path, mode, fi=None):
        self._change()
        return os.open(self._path(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

    def truncate(self, path, length, fh=None):
        self._change()
        os.truncate(self._path(path), length)

    def fsync(self, path, datasync, fh):
        self._change()
        os.fsync(fh)

    def fsyncdir(self, path, datasync, fh):
        self._change()

    def rename(self, old, new):
        self._change()
        os.rename(self._path(old), self._path(new))

    def unlink(self, path):
        self._change()
        os.unlink(self._path(path))

    def mkdir(self, path, mode):
        self._change()
        os.mkdir(self._path(path), mode)

    def chmod(self, path, mode):
        self._change()
        os.chmod(self._path(path), mode)

    def utimens(self, path, times=None):
        os.utime(self._path(path), times)


def main():
    backing, mountpoint, fail_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    FUSE(FailingDisk(backing, fail_after), mountpoint, foreground=True, nothreads=False,
         big_writes=True, max_write=1 << 20, default_permissions=True)


if __name__ == "__main__":
    main()
