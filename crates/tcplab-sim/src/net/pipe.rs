//! A port's pipe: the packets it has admitted, in FIFO order, in a power-of-two ring buffer.
//!
//! `VecDeque` would do, but it takes 32 bytes of the port's first cache line (capacity,
//! pointer, head, length, each a `usize`); this ring takes 24 (the buffer's pointer and length,
//! a 32-bit head and length), which lets that line hold everything a packet's arrival needs
//! (`net::port::Port`).

/// A packet on its way through a port: when it reaches the far end, its handle, its size.
#[derive(Clone, Copy, Debug, Default)]
pub struct InPipe {
    /// Arrival time at the port's far end.
    pub arrival_ns: u64,
    /// When its transmission starts.
    pub start_ns: u64,
    /// Handle in the simulation's packet slab.
    pub packet: u32,
    /// Size on the wire, IP bytes.
    pub size_bytes: u32,
    /// Destination node (a copy, so a router forwards without reading the packet).
    pub dst: u32,
}

/// First allocation, entries (one 128-byte pair of cache lines).
const FIRST_CAPACITY: usize = 4;

/// A FIFO of [`InPipe`] entries.
#[derive(Debug, Default)]
pub struct Pipe {
    /// Capacity a power of two (or 0 before the first push); entry i is at (head + i) & mask.
    buf: Box<[InPipe]>,
    head: u32,
    len: u32,
}

impl Pipe {
    /// Entries held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no entry is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Position in `buf` of entry `i` (from the front).
    #[inline]
    fn slot(&self, i: usize) -> usize {
        (self.head as usize + i) & (self.buf.len().wrapping_sub(1))
    }

    /// Entry `i` from the front (`i < len`).
    #[inline]
    pub fn get(&self, i: usize) -> &InPipe {
        debug_assert!(i < self.len());
        &self.buf[self.slot(i)]
    }

    /// The oldest entry.
    #[inline]
    pub fn front(&self) -> Option<&InPipe> {
        (self.len > 0).then(|| self.get(0))
    }

    /// The newest entry.
    #[inline]
    pub fn back(&self) -> Option<&InPipe> {
        (self.len > 0).then(|| self.get(self.len() - 1))
    }

    /// Append an entry.
    #[inline]
    pub fn push_back(&mut self, e: InPipe) {
        if self.len() == self.buf.len() {
            self.grow();
        }
        let at = self.slot(self.len());
        self.buf[at] = e;
        self.len += 1;
    }

    /// Remove and return the oldest entry.
    #[inline]
    pub fn pop_front(&mut self) -> Option<InPipe> {
        if self.len == 0 {
            return None;
        }
        let e = self.buf[self.slot(0)];
        self.head = self.slot(1) as u32;
        self.len -= 1;
        Some(e)
    }

    /// Entries from `from` to the back, oldest first.
    pub fn iter_from(&self, from: usize) -> impl DoubleEndedIterator<Item = &InPipe> {
        (from..self.len()).map(move |i| self.get(i))
    }

    /// Double the capacity, keeping the entries in order from position 0.
    #[cold]
    fn grow(&mut self) {
        let capacity = (2 * self.buf.len()).max(FIRST_CAPACITY);
        assert!(capacity <= 1 << 31, "a port holds more than 2^31 packets");
        let mut buf = vec![InPipe::default(); capacity].into_boxed_slice();
        for (i, e) in buf.iter_mut().zip(self.iter_from(0)) {
            *i = *e;
        }
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> InPipe {
        InPipe {
            arrival_ns: n,
            start_ns: n,
            packet: n as u32,
            size_bytes: 1,
            dst: 0,
        }
    }

    #[test]
    fn behaves_as_a_fifo_through_wrap_around_and_growth() {
        // Against VecDeque: pushes and pops in a pattern that wraps the head round the buffer
        // at several capacities and grows while wrapped.
        let mut pipe = Pipe::default();
        let mut model = std::collections::VecDeque::new();
        let mut n = 0;
        for round in 0..200u64 {
            for _ in 0..(round % 7 + 1) {
                n += 1;
                pipe.push_back(entry(n));
                model.push_back(n);
            }
            for _ in 0..(round % 5) {
                assert_eq!(pipe.pop_front().map(|e| e.packet as u64), model.pop_front());
            }
            assert_eq!(pipe.len(), model.len());
            assert_eq!(pipe.front().map(|e| e.arrival_ns), model.front().copied());
            assert_eq!(pipe.back().map(|e| e.arrival_ns), model.back().copied());
            let got: Vec<u64> = pipe.iter_from(0).map(|e| e.start_ns).collect();
            assert_eq!(got, model.iter().copied().collect::<Vec<_>>());
            let from = model.len() / 2;
            let tail: Vec<u64> = pipe.iter_from(from).rev().map(|e| e.start_ns).collect();
            assert_eq!(tail, model.range(from..).rev().copied().collect::<Vec<_>>());
        }
        while let Some(x) = model.pop_front() {
            assert_eq!(pipe.pop_front().unwrap().packet as u64, x);
        }
        assert!(pipe.is_empty() && pipe.pop_front().is_none() && pipe.front().is_none());
    }
}
