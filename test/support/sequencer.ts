/**
 * The order test files start in: the fault tests (test/faults/: real processes, killed databases,
 * timeouts; each takes seconds to tens of seconds) first, then the others as vitest orders them. On
 * two workers, the long files started last would run alone at the end while the other worker idles.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node"

const SLOW = "/test/faults/"

export default class SlowFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    return [...sorted.filter((file) => file.moduleId.includes(SLOW)), ...sorted.filter((file) => !file.moduleId.includes(SLOW))]
  }
}
