/** Versions Baton reports. */

/** Baton's own release. */
export const BATON_VERSION = "0.1.0"

/** The REST API version (GET /version). The version header a client sends is checked in ./http/api-version.ts. */
export const API_VERSION = "0.8.4"

/**
 * The server version reported at GET /admin/version. Clients compare its major version with their
 * own and warn when it is older, so it names the release line whose REST API Baton serves.
 */
export const COMPATIBLE_SERVER_VERSION = "3.8.3"
