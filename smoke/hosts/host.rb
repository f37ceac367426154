# smoke/hosts/host.rb SO DB SCRIPT — the hosts script (script.txt) in Ruby's sqlite3 gem
# (Debian's ruby-sqlite3), loading with load_extension.
require 'sqlite3'
so, db, script = ARGV
h = SQLite3::Database.new(':memory:')
h.enable_load_extension(true)
h.load_extension(so)
lit = "'" + db.gsub("'", "''") + "'"
File.foreach(script, encoding: 'UTF-8') do |line|
  line = line.chomp
  next if line.empty? || line.start_with?('#')
  name, sql = line.split("\t", 2)
  begin
    h.execute(sql.gsub('@DB@', lit)).each { |row| puts "#{name}=#{row.join('|')}" }
  rescue SQLite3::Exception => e
    puts "#{name}=ERROR #{e.message}"
  end
end
