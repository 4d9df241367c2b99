/**
 * Causal ordering of events for the triggers service (server.events.causal_ordering = "memory"):
 * an event that `follows` another is held back until that one has been evaluated, then evaluated
 * right after it. A follower whose leader does not come within the lookback is evaluated anyway,
 * in the order the lost followers occurred. Each event is evaluated once.
 */
import type { ReceivedEvent } from "../events/schemas.ts"

/** How long a follower waits for its leader, and how long an event is remembered as seen. */
export const PRECEDING_EVENT_LOOKBACK_MS = 15 * 60 * 1000

const MAX_SEEN = 100_000

export class CausalOrdering {
  private readonly seen = new Map<string, number>()
  private readonly waiting = new Map<string, Array<ReceivedEvent>>()

  hasBeenSeen(id: string): boolean {
    return this.seen.has(id)
  }

  markSeen(id: string, at: number): void {
    this.seen.set(id, at)
    if (this.seen.size > MAX_SEEN) {
      // Oldest first: Map keeps insertion order.
      for (const [key, seenAt] of this.seen) {
        if (this.seen.size <= MAX_SEEN && seenAt > at - PRECEDING_EVENT_LOOKBACK_MS) break
        this.seen.delete(key)
      }
    }
  }

  /** Whether the event must wait for its leader (it is then held); `leaderKnown` says the leader happened earlier elsewhere. */
  holdBack(event: ReceivedEvent, now: number, leaderKnown: boolean): boolean {
    if (event.follows === null || this.seen.has(event.follows) || leaderKnown) return false
    if (now - event.received.getTime() >= PRECEDING_EVENT_LOOKBACK_MS) return false
    const followers = this.waiting.get(event.follows) ?? []
    if (!followers.some((f) => f.id === event.id)) followers.push(event)
    this.waiting.set(event.follows, followers)
    return true
  }

  /** The events that were waiting for `leaderId`, in the order they occurred. */
  releaseFollowers(leaderId: string): Array<ReceivedEvent> {
    const followers = this.waiting.get(leaderId) ?? []
    this.waiting.delete(leaderId)
    return followers.sort((a, b) => a.occurred.getTime() - b.occurred.getTime())
  }

  /** Followers that waited longer than the lookback, in the order they occurred. */
  lostFollowers(now: number): Array<ReceivedEvent> {
    const lost: Array<ReceivedEvent> = []
    for (const [leader, followers] of this.waiting) {
      const stillWaiting = followers.filter((f) => now - f.received.getTime() < PRECEDING_EVENT_LOOKBACK_MS)
      lost.push(...followers.filter((f) => !stillWaiting.includes(f)))
      if (stillWaiting.length === 0) this.waiting.delete(leader)
      else this.waiting.set(leader, stillWaiting)
    }
    return lost.sort((a, b) => a.occurred.getTime() - b.occurred.getTime())
  }
}
