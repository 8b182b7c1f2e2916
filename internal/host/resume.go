package host

// Resuming a partly uploaded blob.
//
// A sync cut off midway (a dropped connection, a timeout, an operator
// restart) leaves `<sha256>.part` on the host. On a slow link, sending a
// 120 MB kubelet.exe again from zero after it was cut off at 90% wastes most
// of the retry, so the next sync continues the .part from where it ends,
// less resumeMargin.
//
// Why the margin: an upload keeps up to sftpMaxConcurrentRequests+1 writes
// of at most sftpMaxPacket bytes in flight (one per pkg/sftp worker, and
// one being handed over), and a server may apply them out of order
// (winsim's, like pkg/sftp's request server, runs several workers; Windows
// OpenSSH applies them one at a time). When the connection drops, the .part
// may end with holes, but only within the writes that were in flight: every
// write sent before them was answered, and these servers answer in request
// order (pkg/sftp's packet manager by design, OpenSSH by working one
// request at a time), so everything before the last in-flight window is on
// disk. Its size therefore overstates what arrived by at most that window;
// resending it costs about 2 MiB, a small part of a resumed large file.
//
// What is not checked: the content of the prefix that is kept. Reading it
// back to hash it would cost as much as sending it again. Its integrity
// rests on the agent instead: the agent hashes every staged blob before it
// moves it into place and deletes one whose content does not hash to its
// name (internal/agent, planFiles), so a bad resumed blob fails one apply
// and is then uploaded again in full by the next sync. The local side is
// still checked whole: the kept prefix is read and hashed locally, so a
// local file that changed since its hash was taken is still refused.

const (
	// sftpMaxConcurrentRequests is how many requests an upload keeps in
	// flight (sftp.MaxConcurrentRequestsPerFile in sftpClient).
	sftpMaxConcurrentRequests = 64
	// sftpMaxPacket is the largest write the SFTP client sends: pkg/sftp's
	// default, which sftpClient keeps.
	sftpMaxPacket = 32 << 10
	// resumeMargin is how much of a .part's end is sent again when it is
	// resumed: every write that may have been in flight when it was cut off.
	resumeMargin = (sftpMaxConcurrentRequests + 1) * sftpMaxPacket
)

// resumeOffset says where an upload of a size-byte blob continues, given a
// .part of partSize bytes already on the host: 0 (start over) when the
// .part is no longer than the margin, or longer than the blob (garbage, not
// a prefix of it); else partSize less the margin.
func resumeOffset(partSize, size int64) int64 {
	if partSize <= resumeMargin || partSize > size {
		return 0
	}
	return partSize - resumeMargin
}
