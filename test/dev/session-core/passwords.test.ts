import { test } from 'tap'
import { hashPassword, verifyPassword } from '../../../dev/session-core/passwords.js'

test('a stored hash is checked with the cost it was made with, whatever the cost is now', async (t) => {
  const strong = await hashPassword('correct horse 1', 32768)
  const light = await hashPassword('correct horse 1', 16)
  t.match(strong, /^scrypt\$32768\$8\$1\$/, 'the parameters travel with the hash')
  t.match(light, /^scrypt\$16\$8\$1\$/)
  t.equal(await verifyPassword('correct horse 1', strong), true)
  t.equal(await verifyPassword('correct horse 1', light), true)
  t.equal(await verifyPassword('correct horse 2', strong), false)
  t.equal(await verifyPassword('correct horse 2', light), false)
  t.equal(await verifyPassword('correct horse 1', undefined), false, 'an unknown account never matches')
})
