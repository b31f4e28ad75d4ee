'use strict';
// require('slotlane/testing'): see lib/testing.js.
module.exports = require('./lib/testing');
