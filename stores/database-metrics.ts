// Each database command's latency and failures, from the driver's command monitoring (the
// client must be made with `monitorCommands: true`). The label is the command's name, from a
// closed list: a name the list does not know is counted as `other`.
import type { MongoClient } from 'mongodb'
import { Counter, Histogram, LATENCY_BUCKETS, type Registry } from '../lib/metrics.js'

const COMMANDS = new Set([
  'find', 'getMore', 'insert', 'update', 'delete', 'findAndModify', 'aggregate', 'count', 'distinct',
  'createIndexes', 'listIndexes', 'listCollections', 'ping', 'hello', 'commitTransaction', 'abortTransaction', 'killCursors', 'endSessions'
])

export function observeDatabaseCalls (client: MongoClient, registry: Registry): void {
  const duration = new Histogram({
    name: 'db_command_duration_seconds',
    help: 'Time the database took to answer a command, by command',
    labelNames: ['command'],
    buckets: LATENCY_BUCKETS,
    registers: [registry]
  })
  const failures = new Counter({
    name: 'db_command_failures_total',
    help: 'Database commands that failed (refused, or no answer), by command',
    labelNames: ['command'],
    registers: [registry]
  })
  const label = (name: string): string => COMMANDS.has(name) ? name : 'other'
  client.on('commandSucceeded', (event) => { duration.observe({ command: label(event.commandName) }, event.duration / 1000) })
  client.on('commandFailed', (event) => {
    const command = label(event.commandName)
    duration.observe({ command }, event.duration / 1000)
    failures.inc({ command })
  })
}
