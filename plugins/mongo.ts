import fp from 'fastify-plugin'
import { MongoClient, type Db } from 'mongodb'

declare module 'fastify' {
  interface FastifyInstance {
    mongo: { client: MongoClient, db: Db }
  }
}

// The API database comes from database.uri (its path names the database).
export default fp(async function mongo (fastify) {
  const client = new MongoClient(fastify.config.database.uri, {
    appName: 'calendar-backend',
    serverSelectionTimeoutMS: 5000
  })
  await client.connect()
  fastify.decorate('mongo', { client, db: client.db() })
  fastify.addHook('onClose', async () => { await client.close() })
}, { name: 'mongo', dependencies: ['config'] })
