/**
 * Every migration, in order. A landed migration is never edited: add the next file and list it here.
 * Keys are `<id>_<name>` as the Migrator expects.
 */
import m0001 from "./0001_initial.ts"
import m0002 from "./0002_flows.ts"
import m0003 from "./0003_runs.ts"
import m0004 from "./0004_deployments.ts"
import m0005 from "./0005_scheduled_runs_index.ts"
import m0006 from "./0006_workers.ts"
import m0007 from "./0007_concurrency_leases.ts"
import m0008 from "./0008_variables.ts"
import m0009 from "./0009_saved_searches.ts"
import m0010 from "./0010_logs.ts"
import m0011 from "./0011_artifacts.ts"
import m0012 from "./0012_blocks.ts"
import m0013 from "./0013_block_document_links.ts"
import m0014 from "./0014_events.ts"
import m0015 from "./0015_automations.ts"
import m0016 from "./0016_flow_run_queries.ts"
import m0017 from "./0017_flow_run_rollup_deltas.ts"
import m0018 from "./0018_flow_run_rollup_quarters.ts"
import m0019 from "./0019_task_run_without_flow_run_key.ts"
import m0020 from "./0020_event_log.ts"
import m0021 from "./0021_instances.ts"
import m0022 from "./0022_triggered_actions.ts"
import m0023 from "./0023_background_tasks.ts"
import m0024 from "./0024_flow_run_live_state_index.ts"
import m0025 from "./0025_instance_leading.ts"
import m0026 from "./0026_flow_run_rollup_live.ts"
import m0027 from "./0027_flow_run_rollup_deployments.ts"
import m0028 from "./0028_log_horizon.ts"
import m0029 from "./0029_flow_run_rollup_hours.ts"
import m0030 from "./0030_service_pass_indexes.ts"
import m0031 from "./0031_cleanup_pass_indexes.ts"
import m0032 from "./0032_task_run_state_cache_state_index.ts"

export const migrations = {
  "0001_initial": m0001,
  "0002_flows": m0002,
  "0003_runs": m0003,
  "0004_deployments": m0004,
  "0005_scheduled_runs_index": m0005,
  "0006_workers": m0006,
  "0007_concurrency_leases": m0007,
  "0008_variables": m0008,
  "0009_saved_searches": m0009,
  "0010_logs": m0010,
  "0011_artifacts": m0011,
  "0012_blocks": m0012,
  "0013_block_document_links": m0013,
  "0014_events": m0014,
  "0015_automations": m0015,
  "0016_flow_run_queries": m0016,
  "0017_flow_run_rollup_deltas": m0017,
  "0018_flow_run_rollup_quarters": m0018,
  "0019_task_run_without_flow_run_key": m0019,
  "0020_event_log": m0020,
  "0021_instances": m0021,
  "0022_triggered_actions": m0022,
  "0023_background_tasks": m0023,
  "0024_flow_run_live_state_index": m0024,
  "0025_instance_leading": m0025,
  "0026_flow_run_rollup_live": m0026,
  "0027_flow_run_rollup_deployments": m0027,
  "0028_log_horizon": m0028,
  "0029_flow_run_rollup_hours": m0029,
  "0030_service_pass_indexes": m0030,
  "0031_cleanup_pass_indexes": m0031,
  "0032_task_run_state_cache_state_index": m0032
}
