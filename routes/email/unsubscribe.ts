import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import formbody from '@fastify/formbody'
import { SECURITY, anyRouteResponses, errorResponse } from '../../schemas/responses.js'
import { OneClickBody, UnsubscribePage, UnsubscribeQuery } from '../../schemas/email.js'
import { confirmPage, invalidLinkPage, unsubscribedPage, UNSUBSCRIBE_PAGE_CSP } from '../../lib/email-pages.js'

// An invalid or expired link is a page for the person who followed it; a request that fails the
// schema (no token at all) is the usual JSON error.
const InvalidLinkResponse = {
  description: 'The link is not valid (a page), or the request does not match its schema (JSON)',
  content: {
    'text/html': { schema: UnsubscribePage },
    'application/json': { schema: errorResponse('The request does not match its schema') }
  }
}
const PageResponse = { description: 'A page for the person who followed the link', content: { 'text/html': { schema: UnsubscribePage } } }

/** The one-click body is 26 bytes; nothing longer is read. */
const FORM_BODY_LIMIT = 1024

// The unsubscribe link of every mail: no session (the token is the proof), GET shows a confirm
// page, POST (the page's form, or a mail client's RFC 8058 one-click) unsubscribes.
const unsubscribe: FastifyPluginAsyncTypebox = async (fastify) => {
  const email = fastify.email
  if (email === null) return
  // This route alone takes a form body (RFC 8058 fixes the type): the app refuses forms everywhere else.
  fastify.removeContentTypeParser('application/x-www-form-urlencoded')
  await fastify.register(formbody, { bodyLimit: FORM_BODY_LIMIT })

  fastify.get('/unsubscribe', {
    schema: {
      description: 'The page an unsubscribe link opens (HTML; a link that is not valid is a 400 page): a button that confirms (opening the link changes nothing)',
      tags: ['email'],
      querystring: UnsubscribeQuery,
      security: SECURITY.none,
      response: { 200: PageResponse, 400: InvalidLinkResponse, ...anyRouteResponses }
    }
  }, async (request, reply) => {
    reply.header('content-security-policy', UNSUBSCRIBE_PAGE_CSP).type('text/html; charset=utf-8')
    if (email.userOfToken(request.query.token) === undefined) return await reply.code(400).send(invalidLinkPage())
    return confirmPage()
  })

  fastify.post('/unsubscribe', {
    schema: {
      description: 'Unsubscribes the link\'s user: every pending mail of the sequence is canceled at once (RFC 8058 one-click)',
      tags: ['email'],
      querystring: UnsubscribeQuery,
      body: OneClickBody,
      security: SECURITY.none,
      response: { 200: PageResponse, 400: InvalidLinkResponse, 415: errorResponse('Not a form body (application/x-www-form-urlencoded)'), ...anyRouteResponses }
    }
  }, async (request, reply) => {
    reply.header('content-security-policy', UNSUBSCRIBE_PAGE_CSP).type('text/html; charset=utf-8')
    // A browser submitting the confirm page navigates; a mail client's one-click POST does not.
    const done = await email.unsubscribe(request.query.token, request.headers['sec-fetch-mode'] === 'navigate' ? 'page' : 'one-click')
    if (done === undefined) return await reply.code(400).send(invalidLinkPage())
    return unsubscribedPage()
  })
}

export default unsubscribe
