/** Comparing secrets (tokens, credentials) in time that does not depend on where they differ. */
import { timingSafeEqual } from "node:crypto"

export const sameSecret = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}
