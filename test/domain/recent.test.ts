import { describe, expect, it } from "@effect/vitest"
import { RecentSet } from "../../src/domain/recent.ts"

describe("RecentSet", () => {
  it("keeps the last `capacity` keys, forgets the oldest, and tells a repeat", () => {
    const recent = new RecentSet<string>(3)
    expect(["a", "b", "c"].map((k) => recent.add(k))).toEqual([true, true, true])
    expect(recent.add("b")).toBe(false)
    expect(recent.add("d")).toBe(true)
    expect(["a", "b", "c", "d"].map((k) => recent.has(k))).toEqual([false, true, true, true])
    expect(recent.size).toBe(3)
  })

  it("a key deleted and added again is kept for its later place, not forgotten at its first", () => {
    const recent = new RecentSet<string>(3)
    recent.add("a")
    recent.add("b")
    expect(recent.delete("a")).toBe(true)
    recent.add("a")
    // The ring comes round to a's first place: a stays (its place is now the later one).
    recent.add("c")
    expect(recent.has("a")).toBe(true)
    // Next is b's place: b goes.
    recent.add("d")
    expect(["a", "b", "c", "d"].map((k) => recent.has(k))).toEqual([true, false, true, true])
    expect(recent.size).toBe(3)
  })

  it("costs the same for every add however many came before (no walk over forgotten slots)", () => {
    const recent = new RecentSet<string>(10_000)
    const time = (n: number, from: number) => {
      const started = process.cpuUsage()
      for (let i = from; i < from + n; i++) recent.add(`id-${i}`)
      const used = process.cpuUsage(started)
      return (used.user + used.system) / 1000
    }
    time(20_000, 0)
    // 200,000 adds on a full set: the iterator-based version took over a second here.
    expect(time(200_000, 20_000)).toBeLessThan(300)
  })
})
