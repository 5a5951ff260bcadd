// rrule's ES module build has named exports only, while the shared recurrence rules
// (lib/events/recurrence.ts) import its default export as Node's CommonJS interop provides it.
// The bundle maps `rrule` here, so both forms work without pulling in the CommonJS build.
import * as rrule from 'rrule/dist/esm/index.js'

export * from 'rrule/dist/esm/index.js'
export default rrule
