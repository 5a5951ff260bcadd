import fp from 'fastify-plugin'
import { WriteIssueStore } from '../stores/write-issues.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncWriteIssues: WriteIssueStore
  }
}

export default fp(async function syncWriteIssues (fastify) {
  const issues = new WriteIssueStore(fastify.syncDb.db)
  await issues.ensureIndexes()
  fastify.decorate('syncWriteIssues', issues)
}, { name: 'sync-write-issues', dependencies: ['sync-database'] })
