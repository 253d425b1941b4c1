'use strict';

// Planted by sandlot's verify corpus: failures of mocha specs (lint-clean, so the project's
// own `npm run eslint &&` lets them run).
var traverse = require('../index');
var assert = require('assert');

describe('planted', function() {
  it('counts every schema once', function() {
    var count = 0;
    traverse({properties: {a: {type: 'string'}}}, {cb: function() { count++; }});
    assert.strictEqual(count, 3);
  });

  describe('keywords', function() {
    it('knows items is a schema keyword', function() {
      assert.strictEqual(traverse.keywords.items, false);
    });

    it('knows required is not one', function() {
      assert.strictEqual(traverse.keywords.required, undefined);
    });
  });
});
