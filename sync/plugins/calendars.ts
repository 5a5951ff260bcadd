import fp from 'fastify-plugin'
import { CalendarStore } from '../stores/calendars.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncCalendars: CalendarStore
  }
}

export default fp(async function syncCalendars (fastify) {
  const calendars = new CalendarStore(fastify.syncDb.db)
  await calendars.ensureIndexes()
  fastify.decorate('syncCalendars', calendars)
}, { name: 'sync-calendars', dependencies: ['sync-database'] })
