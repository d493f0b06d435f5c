//! What the engine's state costs in memory, counted by the engine itself: a struct's inline size
//! (`std::mem::size_of`) plus the heap its buffers hold. A run may hold tens of thousands of
//! flows, most of them idle (not started yet, or finished); [`HeapBytes`] lets a test and a
//! benchmark see what each one costs (`Simulator::flow_state_bytes`).
//!
//! And when it is read: on a large run the state a packet will touch is out of the caches, so
//! the simulator asks for it ahead of time ([`prefetch`], see `Simulator::prefetch_ahead`).

use std::collections::{BinaryHeap, VecDeque};
use std::mem::size_of;

/// Bytes a value holds on the heap (its buffers' capacity), not counting its inline size.
pub trait HeapBytes {
    fn heap_bytes(&self) -> usize;
}

// Elements are plain data (numbers, times, ranges): a buffer's heap is its capacity.
impl<T> HeapBytes for Vec<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * size_of::<T>()
    }
}

impl<T> HeapBytes for VecDeque<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * size_of::<T>()
    }
}

impl<T> HeapBytes for BinaryHeap<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * size_of::<T>()
    }
}

impl HeapBytes for String {
    fn heap_bytes(&self) -> usize {
        self.capacity()
    }
}

impl<T: HeapBytes> HeapBytes for Option<T> {
    fn heap_bytes(&self) -> usize {
        self.as_ref().map_or(0, T::heap_bytes)
    }
}

/// Ask for the cache line holding `value`, ahead of its use. A hint that changes nothing but
/// timing: `mem_prefetch` wraps the prefetch instruction safely (the engine crates forbid
/// `unsafe`). A struct larger than a line is asked for field by field, one field on each line
/// its user reads (the `prefetch` methods of the per-packet state).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    mem_prefetch::prefetch_read_data::<T, 3>(value);
}
