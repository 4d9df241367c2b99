/**
 * The string helpers that stand in for Intl: the same text as `toLocaleString("en-US")` for integers
 * (the test may use Intl; the server does not, see src/domain/strings.ts), and version order.
 */
import { describe, expect, it } from "@effect/vitest"
import { compareVersions, groupThousands, trim, trimStart } from "../../src/domain/strings.ts"

describe("groupThousands", () => {
  it("writes integers as toLocaleString(\"en-US\") does", () => {
    const samples = [0, 1, 12, 999, 1000, 1001, 99_999, 100_000, 1_048_576, 12_345_678, -1, -999, -1000, -1_234_567, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]
    for (let k = 0; k < 200; k++) samples.push(Math.floor(Math.random() * 10 ** Math.floor(Math.random() * 16)))
    for (const n of samples) expect(groupThousands(n), String(n)).toBe(n.toLocaleString("en-US"))
  })

  it("writes other numbers as String does", () => {
    expect(groupThousands(1.5)).toBe("1.5")
    expect(groupThousands(1e21)).toBe("1e+21")
    expect(groupThousands(Number.NaN)).toBe("NaN")
  })
})

describe("compareVersions", () => {
  it("orders runs of digits as numbers and the rest character by character", () => {
    const names = ["python3.12", "python3.9", "python2.7", "python3.10", "python3.11", "python3", "python3.11.0", "python3.011", "pythonx"]
    expect([...names].sort(compareVersions)).toEqual([
      "python2.7",
      "python3",
      "python3.9",
      "python3.10",
      "python3.011",
      "python3.11",
      "python3.11.0",
      "python3.12",
      "pythonx"
    ])
    expect(compareVersions("3.9", "3.9")).toBe(0)
    expect(compareVersions("1" + "0".repeat(30), "9" + "0".repeat(29))).toBe(1)
    expect(compareVersions("a", "b")).toBe(-1)
    expect(compareVersions("", "a")).toBe(-1)
  })
})

describe("trimStart and trim", () => {
  it("take the characters given off the start, and off both ends", () => {
    expect(trimStart("00120", "0")).toBe("120")
    expect(trim("/a/b/", "/")).toBe("a/b")
    expect(trim("////", "/")).toBe("")
  })
})
