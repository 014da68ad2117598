var connection = new autobahn.Connection({url: "ws://127.0.0.1:8080/ws", realm: "realm1"});
connection.open();
