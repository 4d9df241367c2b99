/**
 * The last `capacity` keys added, as a set: adding past the capacity forgets the oldest. A ring of
 * the keys in the order they came beside the set. (Forgetting the oldest through the set's own
 * iterator, `set.values().next()`, walks over every slot deleted before it: on a busy set each add
 * costs microseconds, which a stream of events pays for every event.)
 */
export class RecentSet<K> {
  /** Each key, with its place in the ring. */
  private readonly keys = new Map<K, number>()
  private readonly ring: Array<K | undefined>
  private next = 0

  constructor(readonly capacity: number) {
    this.ring = new Array<K | undefined>(capacity)
  }

  has(key: K): boolean {
    return this.keys.has(key)
  }

  /** Adds `key` (forgetting the oldest when full); false when it was there already. */
  add(key: K): boolean {
    if (this.keys.has(key)) return false
    const oldest = this.ring[this.next]
    // Unless it was deleted and added again since (it has a later place then).
    if (oldest !== undefined && this.keys.get(oldest) === this.next) this.keys.delete(oldest)
    this.ring[this.next] = key
    this.keys.set(key, this.next)
    this.next = (this.next + 1) % this.capacity
    return true
  }

  /** Forgets `key` now; its place in the ring is left to come round. */
  delete(key: K): boolean {
    return this.keys.delete(key)
  }

  get size(): number {
    return this.keys.size
  }
}
