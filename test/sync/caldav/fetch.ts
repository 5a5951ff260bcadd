import { providerFetch } from '../../../sync/providers/buffered-fetch.js'
import { CALDAV_ANSWER_LIMIT_BYTES } from '../../../sync/providers/caldav/dav-client.js'

/** The CalDAV adapter's fetch without its address policy: the tests' servers listen on 127.0.0.1. */
export const caldavFetch = providerFetch({ provider: 'caldav', maxBytes: CALDAV_ANSWER_LIMIT_BYTES })
