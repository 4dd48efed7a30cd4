package locks

// What a client holds besides its token: the lock's random value, and the side of a read/write
// lock it holds.
//
// The lock's random value, for antirez's alternative to fencing tokens (A4): the resource's
// cas-random register is claimed with the holder's value at the read and accepts a write only
// while the claim is still that value. Only designs whose lock value is random and unique (per
// acquisition, or per client where one client holds at most once at a time) implement Valued;
// the others leave cas-random not applicable, as token-less designs leave the fenced registers.
// The methods live here rather than in each design's file so the designs stay about locking.

// Valued is implemented by designs whose lock carries a random unique value.
type Valued interface {
	// Value is the value of the current (or last) hold; "" when there is none yet.
	Value() string
}

// ValueOf is l's random value, or "" when its design has none.
func ValueOf(l Lock) string {
	if v, ok := l.(Valued); ok {
		return v.Value()
	}
	return ""
}

// set-nx-px, and through it get-del, del-no-check and watch-multi (same acquire): the SET's
// random 20 bytes, new for each acquisition.
func (l *setNxPx) Value() string { return l.value }

// get-then-set: the random value of its last SET, new for each acquisition.
func (l *getThenSet) Value() string { return l.value }

// setnx-expire: SETNX of a random value (then EXPIRE), new for each acquisition.
func (l *setnxExpire) Value() string { return l.value }

// redlock: the random value SET on every node, new for each acquisition.
func (l *redlock) Value() string { return l.value }

// multilock: the random value SET on every node, new for each acquisition.
func (l *multilock) Value() string { return l.value }

// redsync: the library's own random value (Mutex.Value), new for each acquisition.
func (l *redsyncLock) Value() string { return l.mutex.Value() }

// redislock: the library's random token (Lock.Token), new for each Obtain.
func (l *redisLockLib) Value() string {
	if l.held == nil {
		return ""
	}
	return l.held.Token()
}

// redisson and redisson-fenced: the owner id, the hash field "<uuid>:<thread id>". It is one per
// client, not per acquisition, as in Redisson; that is enough for check-and-set because a client
// never has two critical sections at once.
func (l *hashLock) Value() string { return l.field }

// RoleHolder is implemented by read/write designs whose client may hold another side than its
// role: an external program answers an acquire with the side the library granted (a writer
// that downgraded to the read lock holds it for its next section).
type RoleHolder interface {
	// HeldRole is the side of the current (or last) hold: ReadRole, WriteRole, or "" when the
	// design did not say.
	HeldRole() string
}

// HeldRole is the side l holds now: what its design says, else the client's role.
func HeldRole(l Lock, role string) string {
	if h, ok := l.(RoleHolder); ok && h.HeldRole() != "" {
		return h.HeldRole()
	}
	return role
}
