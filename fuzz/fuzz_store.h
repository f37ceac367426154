/*
** fuzz_store.h — the schema and data of the fuzzers' scratch stores: every
** schema of the public acceptance cases (../shared/acceptance/cases.jsonl)
** in one vector, the first transactions of each, then two that change and
** retract values so asOf, since and history have something to tell apart,
** and a :db/noHistory attribute.
** Embedded so that a reproducer runs without the shared directory.
*/
#ifndef MENTAT_FUZZ_STORE_H
#define MENTAT_FUZZ_STORE_H

static const char *const azFuzzStoreTx[] = {
  ("[{:db/ident :person/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :person/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/index true}\n"
   " {:db/ident :person/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :person/email :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :person/ssn :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/value :db/index true}\n"
   " {:db/ident :person/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :person/parent :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :person/alias :db/valueType :db.type/string :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :person/height :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :person/vegetarian :db/valueType :db.type/boolean :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :person/color :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :person/salary :db/valueType :db.type/double :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :person/born :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :tx/note :db/valueType :db.type/string :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :thing/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :thing/uuid :db/valueType :db.type/uuid :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :node/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :node/follow :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :node/f1 :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :node/f2 :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :monster/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :monster/heads :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :monster/weapon :db/valueType :db.type/string :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :player/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :player/veg :db/valueType :db.type/boolean :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :player/play :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :game/score :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :order/id :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :order/items :db/valueType :db.type/ref :db/cardinality :db.cardinality/many :db/isComponent true}\n"
   " {:db/ident :order/customer :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :item/sku :db/valueType :db.type/string :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :item/qty :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :customer/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :page/id :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :page/title :db/valueType :db.type/string :db/cardinality :db.cardinality/many}\n"
   " {:db/ident :shirt/id :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :shirt/size :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}\n"
   " {:db/ident :doc/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}\n"
   " {:db/ident :doc/text :db/valueType :db.type/string :db/cardinality :db.cardinality/many :db/fulltext true :db/index true}]\n"),
  ("[\n"
   " {:db/id \"p1\" :person/id 1 :person/name \"Ivan\" :person/age 10 :person/email \"ivan1@example.com\"\n"
   "  :person/friend [\"p2\" \"p3\"] :person/alias [\"Vanya\" \"Jo\"] :person/height 180 :person/vegetarian true\n"
   "  :person/color :color/red :person/salary 1500.5 :person/born #inst \"2010-03-01T00:00:00.000Z\"}\n"
   " {:db/id \"p2\" :person/id 2 :person/name \"Ivan\" :person/age 20 :person/email \"ivan2@example.com\"\n"
   "  :person/friend [\"p3\"] :person/height 175 :person/vegetarian false :person/color :color/blue\n"
   "  :person/salary 2000.0 :person/parent \"p1\" :person/born #inst \"2000-06-15T12:00:00.000Z\"}\n"
   " {:db/id \"p3\" :person/id 3 :person/name \"Oleg\" :person/age 10 :person/friend [\"p4\"] :person/color :color/red :person/parent \"p1\"}\n"
   " {:db/id \"p4\" :person/id 4 :person/name \"Oleg\" :person/age 20 :person/vegetarian true :person/salary 900.25}\n"
   " {:db/id \"p5\" :person/id 5 :person/name \"Ivan\" :person/age 10 :person/parent \"p4\"}\n"
   " {:db/id \"p6\" :person/id 6 :person/name \"Ivan\" :person/age 20}\n"
   "]\n"),
  "[{:thing/id 7 :thing/uuid #uuid \"cf62d552-6569-4d1b-b667-04703041dfc4\"} {:thing/id 8 :thing/uuid #uuid \"550e8400-e29b-41d4-a716-446655440000\"}]\n",
  ("[\n"
   " {:db/id \"n0\" :node/id 0 :node/f1 [\"n1\"]}\n"
   " {:db/id \"n1\" :node/id 1 :node/follow [\"n2\"] :node/f2 [\"n2\"]}\n"
   " {:db/id \"n2\" :node/id 2 :node/follow [\"n3\" \"n4\"] :node/f1 [\"n3\"]}\n"
   " {:db/id \"n3\" :node/id 3 :node/follow [\"n4\"] :node/f2 [\"n4\"]}\n"
   " {:db/id \"n4\" :node/id 4 :node/follow [\"n6\"] :node/f1 [\"n5\"]}\n"
   " {:db/id \"n5\" :node/id 5 :node/follow [\"n3\"] :node/f2 [\"n6\"]}\n"
   " {:db/id \"n6\" :node/id 6}\n"
   "]\n"),
  ("[\n"
   " {:monster/name \"Medusa\" :monster/heads 1 :monster/weapon \"Stony gaze\"}\n"
   " {:monster/name \"Cyclops\" :monster/heads 1 :monster/weapon [\"Large club\" \"Mighty arms\" \"Stompy feet\"]}\n"
   " {:monster/name \"Chimera\" :monster/heads 1 :monster/weapon \"Goat-like agility\"}\n"
   " {:monster/name \"Cerberus\" :monster/heads 3 :monster/weapon [\"Eight-foot bone\" \"Deadly drool\"]}\n"
   "]\n"),
  ("[\n"
   " [:db/add \"a\" :player/name \"Alice\"] [:db/add \"a\" :player/veg true]\n"
   " [:db/add \"b\" :player/name \"Beli\"] [:db/add \"b\" :player/veg true]\n"
   " [:db/add \"c\" :player/name \"Carlos\"] [:db/add \"c\" :player/veg false]\n"
   " [:db/add \"d\" :player/name \"Diana\"] [:db/add \"d\" :player/veg false]\n"
   " [:db/add \"aa\" :game/score 14] [:db/add \"ab\" :game/score 99] [:db/add \"ac\" :game/score 14]\n"
   " [:db/add \"ba\" :game/score 22] [:db/add \"bb\" :game/score 11]\n"
   " [:db/add \"ca\" :game/score 42]\n"
   " [:db/add \"da\" :game/score 5] [:db/add \"db\" :game/score 28]\n"
   " [:db/add \"a\" :player/play \"aa\"] [:db/add \"a\" :player/play \"ab\"] [:db/add \"a\" :player/play \"ac\"]\n"
   " [:db/add \"b\" :player/play \"ba\"] [:db/add \"b\" :player/play \"bb\"]\n"
   " [:db/add \"c\" :player/play \"ca\"]\n"
   " [:db/add \"d\" :player/play \"da\"] [:db/add \"d\" :player/play \"db\"]\n"
   "]\n"),
  ("[\n"
   " {:db/id \"c1\" :customer/name \"Acme\"}\n"
   " {:order/id \"o1\" :order/customer \"c1\" :order/items [{:item/sku \"A\" :item/qty 2} {:item/sku \"B\" :item/qty 1}]}\n"
   " {:order/id \"o2\" :order/customer \"c1\" :order/items [{:item/sku \"C\" :item/qty 5}]}\n"
   "]\n"),
  "[[:db/add \"foo\" :page/id \"x\"] [:db/add \"foo\" :page/title \"x\"] [:db/add \"bar\" :page/id \"x\"] [:db/add \"bar\" :page/title \"y\"]]\n",
  "[{:db/ident :size/small} {:db/ident :size/large}]\n",
  "[{:shirt/id \"s1\" :shirt/size :size/large} {:shirt/id \"s2\" :shirt/size :size/small}]\n",
  ("[\n"
   " {:doc/id 1 :doc/text [\"hello darkness my old friend\" \"I have come to talk with you again\"]}\n"
   " {:doc/id 2 :doc/text \"a friend in need\"}\n"
   " {:doc/id 3 :doc/text \"nothing to see here\"}\n"
   "]\n"),
  ("[[:db/add [:person/id 1] :person/age 11] [:db/retract [:person/id 1] :person/alias \"Jo\"]\n"
   " [:db/add \"datomic.tx\" :tx/note \"second\"] {:thing/id 9 :thing/uuid #uuid \"00000000-0000-0000-0000-000000000009\"}]\n"),
  "[[:db/retractEntity [:person/id 6]] [:db/add [:person/id 3] :person/name \"Olga\"]]\n",
  "[{:db/ident :thing/seen :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/noHistory true}]\n",
  "[{:thing/id 7 :thing/seen 1} {:thing/id 8 :thing/seen 2}]\n"
};
#define FUZZ_STORE_NTX ((int)(sizeof azFuzzStoreTx / sizeof azFuzzStoreTx[0]))

#endif /* MENTAT_FUZZ_STORE_H */
