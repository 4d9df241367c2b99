/**
 * Reading `GET {base}/metrics` in tests: the Prometheus text format parsed into families and
 * samples, and a sample looked up by its name and some of its labels. (parse-prometheus-text-format
 * drops the labels, sums and counts of labelled histograms, so the format is read here: one sample
 * a line, `name{label="value",…} value`, label values escaped with \\, \" and \n.)
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "./server.ts"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Family {
  readonly name: string
  readonly type: string
  readonly help: string
}

export interface Exposition {
  /** Every family declared (# TYPE), samples or none. */
  readonly families: ReadonlyMap<string, Family>
  readonly samples: ReadonlyArray<Sample>
  /** The samples named `name` whose labels include `labels`. */
  readonly find: (name: string, labels?: Readonly<Record<string, string>>) => ReadonlyArray<Sample>
  /** The value of the one sample named `name` with `labels`; undefined when there is none. */
  readonly value: (name: string, labels?: Readonly<Record<string, string>>) => number | undefined
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y

const unescape = (value: string) => value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))

const parseLabels = (text: string): Record<string, string> => {
  const labels: Record<string, string> = {}
  LABEL.lastIndex = 0
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text)
    if (m === null) throw new Error(`malformed labels: {${text}}`)
    labels[m[1]!] = unescape(m[2]!)
  }
  return labels
}

/** Prometheus reads "NaN" in any case (prom-client writes "Nan"). */
const parseValue = (text: string) =>
  text === "+Inf" ? Infinity : text === "-Inf" ? -Infinity : text.toLowerCase() === "nan" ? NaN : Number(text)

/** Parses an exposition; a line it cannot read fails the test. */
export const parseExposition = (text: string): Exposition => {
  const families = new Map<string, Family>()
  const helps = new Map<string, string>()
  const samples: Array<Sample> = []
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line)
    if (comment !== null) {
      const [, kind, name, rest] = comment
      if (kind === "HELP") helps.set(name!, rest!)
      else families.set(name!, { name: name!, type: rest!, help: helps.get(name!) ?? "" })
      continue
    }
    const m = SAMPLE.exec(line)
    if (m === null) throw new Error(`malformed sample line: ${line}`)
    const value = parseValue(m[3]!)
    if (Number.isNaN(value) && m[3]!.toLowerCase() !== "nan") throw new Error(`malformed value: ${line}`)
    samples.push({ name: m[1]!, labels: m[2] === undefined ? {} : parseLabels(m[2]), value })
  }
  const find = (name: string, labels: Readonly<Record<string, string>> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  const value = (name: string, labels: Readonly<Record<string, string>> = {}) => {
    const found = find(name, labels)
    if (found.length > 1) throw new Error(`${found.length} samples of ${name} with ${JSON.stringify(labels)}`)
    return found[0]?.value
  }
  return { families, samples, find, value }
}

/** `GET {base}/metrics` on the test server, answered 200 in the Prometheus text format, parsed. */
export const scrape = (headers: Record<string, string> = {}) =>
  Effect.map(request("GET", "/metrics", { headers }), (res) => {
    expect(res.status, res.text).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
    return parseExposition(res.text)
  })
