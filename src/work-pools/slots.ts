/** A run holding a concurrency slot, as the concurrency status answers list it. */
import type { SlotHolder } from "./poll-repo.ts"

export const slotSummary = (holder: SlotHolder, at: Date) => ({
  id: holder.id,
  name: holder.name,
  state_type: holder.state_type as any,
  state_name: holder.state_name,
  start_time: holder.start_time,
  state_timestamp: holder.state_timestamp,
  time_in_current_state: holder.state_timestamp === null ? null : (at.getTime() - holder.state_timestamp.getTime()) / 1000
})
